package source

import (
	"slices"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// Every poll re-covers the late phase (issue 31). A fresh poll of a
// caught-up stream asks from the start of its dense phase rather than from
// its watermark, as far back as its first page holds
// (recheck.Plan.Recover): a record late by less than that arrives with
// the next poll, at no extra request; the older part of a dense phase of
// more than a page keeps its counts. What the window holds
// below the watermark goes out as a Revisit page asked as late
// (cursor.AskedLate, emitRecords): the once filter leaves out what was
// delivered before (C7) and the stream learns the platform's delays from
// what it keeps, as from a recheck. The window's last page moves the
// watermark to its end (never back), and its log changes, committed with
// it, log the new part [watermark, end) and give each re-covered window
// the count the chain held in it, asked now (logRecovered): their sweep
// need not count them again. A crash mid re-cover resumes the chain (or
// asks the window again): the delivered set leaves out what went out, and
// the log keeps its old counts until the last page commits.

// recoverLatePhase returns w, the window a caught-up stream is about to ask, widened
// back to the start of its dense phase when re-covering it pays (see the
// comment at the top of the file); w itself otherwise.
func (r *run) recoverLatePhase(w window.Window, now time.Time) window.Window {
	p := r.p
	rv := p.rv
	if p.cfg.Spec.Edge || !rv.rechecking() || !w.Start.Equal(r.cur.Watermark) ||
		p.planner().Limit(now).After(w.End) {
		return w // not the freshest window of a caught-up core stream
	}
	rv.learn()
	cfg := rv.pts()
	expect := int64(p.st.Density() * w.Duration().Hours())
	from, ok := cfg.Recover(rv.wlog.list(), r.cur.Watermark, w.End, expect, p.paging().PageSize())
	if !ok {
		return w
	}
	if floor := p.plan.Floor(now); from.Before(floor) {
		return w
	}
	w.Start = from
	rv.polled = now
	return w
}

// recoverTally is what the walk of a core window that starts below the
// watermark saw (a re-cover, or a configured overlap): how many records
// its chain brought in each logged window it covers whole and in the part
// past the watermark, so that the log can say what each held. It keeps a
// count per cell, never the records (a long window of a backfill with an
// overlap holds many).
type recoverTally struct {
	// below is the watermark before the window.
	below time.Time
	// cells are the logged windows the window covers whole, then the part
	// past the watermark, by start; counts their records so far.
	cells  []window.Window
	counts []int64
	// partial: the chain was resumed after a restart: its first pages
	// are unknown, and so are the counts.
	partial bool
}

// newRecoverTally returns the tally of a walk of w from a watermark of
// below, over the logged windows of log (sorted by start).
func newRecoverTally(w window.Window, below time.Time, log []cursor.LoggedWindow, partial bool) *recoverTally {
	t := &recoverTally{below: below, partial: partial}
	to := below
	if w.End.Before(to) {
		to = w.End
	}
	for _, e := range log {
		if !e.Edge() && !e.Start.Before(w.Start) && !e.End.After(to) {
			t.cells = append(t.cells, window.Window{Start: e.Start, End: e.End})
		}
	}
	if w.End.After(below) {
		t.cells = append(t.cells, window.Window{Start: below, End: w.End})
	}
	t.counts = make([]int64, len(t.cells))
	return t
}

// add counts the records of envs in their cells.
func (t *recoverTally) add(envs []record.Envelope) {
	if t == nil {
		return
	}
	for _, e := range envs {
		i, _ := slices.BinarySearchFunc(t.cells, e.Time, func(c window.Window, x time.Time) int {
			if !c.End.After(x) {
				return -1
			}
			return 1
		})
		if i < len(t.cells) && !e.Time.Before(t.cells[i].Start) {
			t.counts[i]++
		}
	}
}

// in returns the records counted in the cell that starts at start, and
// false when no cell does.
func (t *recoverTally) in(start time.Time) (int64, bool) {
	for i, c := range t.cells {
		if c.Start.Equal(start) {
			return t.counts[i], true
		}
	}
	return 0, false
}

// logRecovered logs a core window w that started below the watermark and
// whose chain was walked to its end, first page served at started: the
// part past the watermark as a new entry, with the records the chain held
// there (0 for a resumed chain: never more than was delivered, so a
// recheck finds it grown and asks, at worst, once too often), and each
// logged window w covered whole with the count the chain held in it, asked
// at started (a resumed chain leaves them as they are: counted later, as
// before).
func (r *rechecks) logRecovered(lc *cursor.LogChanges, w window.Window, t *recoverTally, started time.Time) {
	now := r.cfg.Clock.Now()
	if started.IsZero() {
		started = now
	}
	cfg := r.pts()
	lc.Windows.PruneBefore = r.cfg.Recheck.PruneBefore(now)
	if w.End.After(t.below) {
		var n int64
		if c, ok := t.in(t.below); ok && !t.partial {
			n = c
		}
		e := cfg.Entry(t.below, w.End, n, "", started)
		if !cfg.Done(e) {
			r.wlog[e.Start] = e
			lc.Windows.Put = append(lc.Windows.Put, e)
		}
	}
	if t.partial {
		return
	}
	for _, e := range r.wlog.list() {
		n, ok := t.in(e.Start)
		if !ok || e.Start.Equal(t.below) {
			continue
		}
		ne := cfg.Recovered(e, n, started)
		if cfg.Done(ne) {
			delete(r.wlog, e.Start)
			lc.Windows.Delete = append(lc.Windows.Delete, e.Start)
			continue
		}
		r.wlog[e.Start] = ne
		lc.Windows.Put = append(lc.Windows.Put, ne)
	}
}
