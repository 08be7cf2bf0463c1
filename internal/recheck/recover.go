package recheck

import (
	"sync"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Recover returns where a fresh poll of a caught-up stream starts when it
// re-covers the late phase (issue 31): the window [watermark, end) it is
// about to ask becomes [from, end), with from the start of the oldest
// logged window that ends less than Dense before end, among the windows
// that run back from the watermark without a gap, as far as their logged
// counts and the new window's rows (expect, as the stream's density
// estimates them) fit in pageRows: the poll's first page, which it asks
// anyway, so that re-covering costs no request. The once filter leaves
// out what was delivered (C7), so a record late by less than the reach
// arrives with the next poll, and the re-covered windows need no count at
// this step's sweep (their entries say they were asked, Recovered). A
// dense phase that holds more than a page is re-covered in its latest
// part, where most late records fall; its older windows keep their counts.
//
// It reports false, and the poll asks from the watermark, when c is not
// Auto (fixed points keep their counts), no logged window ends at the
// watermark, or not even the newest one fits in the page with the new
// window.
func (p Plan) Recover(log []cursor.LoggedWindow, watermark, end time.Time, expect, pageRows int64) (time.Time, bool) {
	if !p.cfg.Auto || p.Dense <= 0 || pageRows <= 0 {
		return time.Time{}, false
	}
	log = sorted(log)
	reach := end.Add(-p.Dense)
	from, at := time.Time{}, watermark
	rows := max(expect, 0)
	for i := len(log) - 1; i >= 0; i-- {
		w := log[i]
		if w.End.After(at) {
			continue // past the watermark: not the stream's past
		}
		if w.Edge() || !w.End.Equal(at) || !w.End.After(reach) {
			break // a gap, or older than the dense phase
		}
		if rows += max(w.Count, 0); rows > pageRows {
			break // more than the page holds
		}
		from, at = w.Start, w.Start
	}
	if from.IsZero() {
		return time.Time{}, false
	}
	return from, true
}

// Recovered returns w, a logged window a fresh poll re-covered whole
// (Recover), with the count of the records the poll's chain held in it
// and asked at asked: the chain delivered each of them (now, or the once
// filter left it out as delivered before), so the count never exceeds
// what was delivered (cursor.LoggedWindow.Count), and the window's points
// up to asked are passed; it is due at the plan's first point after
// (Asked).
func (p Plan) Recovered(w cursor.LoggedWindow, count int64, asked time.Time) cursor.LoggedWindow {
	w.Count = count
	w.Passed = max(w.Passed, asked.Sub(w.End), 0)
	return p.Asked(w)
}

// Pool is what the streams of one source learnt of the platform's delays,
// together: a source's delays are mostly the platform's, not the
// account's, so a quiet account learns from its busy siblings as fast as
// they do (issue 31). Each stream keeps its own cursor.Delays (the
// checkpoint keeps them with its cursor) and sets them here as they
// change; Sum is their sum, which Config.Learnt reads beside the
// stream's own. Nothing of it is stored: the streams' own delays are.
//
// A Pool is safe for concurrent use. The zero Pool is ready.
type Pool struct {
	mu      sync.Mutex
	members map[record.Stream]cursor.Delays
}

// Set takes d as what stream k learnt (a copy).
func (p *Pool) Set(k record.Stream, d cursor.Delays) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.members == nil {
		p.members = map[record.Stream]cursor.Delays{}
	}
	p.members[k] = d.Clone()
}

// Sum returns what the streams of the pool learnt together, decayed to
// now: the sum of their delays.
func (p *Pool) Sum(now time.Time) cursor.Delays {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out cursor.Delays
	for _, d := range p.members {
		d = d.Clone()
		decay(&d, now)
		out.Fresh += d.Fresh
		if len(d.Late) > 0 && out.Late == nil {
			out.Late = make([]float64, len(cursor.DelayBounds)+1)
		}
		for i, x := range d.Late {
			out.Late[min(i, len(out.Late)-1)] += x
		}
	}
	if !out.Empty() {
		out.At = now
	}
	return out
}
