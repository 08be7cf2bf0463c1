package status

import (
	"math"
	"time"

	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
)

// snapshots returns every poller's snapshot.
func (p *Reporter) snapshots() []source.Snapshot {
	pollers := p.current()
	out := make([]source.Snapshot, len(pollers))
	for i, pl := range pollers {
		out[i] = pl.Snapshot()
	}
	return out
}

// runPart returns how much of the backlog a stream had when its poller
// started it has covered (done) and the whole (total), in time of data.
// Within the window in flight the rows delivered so far count, at the
// stream's learned density. started is false before the poller began.
//
// A stream caught up has nothing left: its Backlog.Behind still counts the
// time from its watermark to now (the lag it keeps while tailing, and the
// time since its last poll), which is no backlog, so that the progress
// line and "done" say 100% when every stream is caught up.
func runPart(s source.Snapshot) (done, total time.Duration, started bool) {
	if s.Started.IsZero() {
		return 0, 0, false
	}
	done = max(s.Watermark.Sub(s.StartWatermark), 0)
	if s.CaughtUp {
		return done, done, true
	}
	behind := max(s.Backlog.Behind, 0)
	if f := s.InFlight; f != nil && s.Density > 0 && !s.CaughtUp {
		span := f.Window.End.Sub(f.Window.Start)
		if expect := s.Density * span.Hours(); expect > 0 && span > 0 {
			part := time.Duration(min(float64(f.Rows)/expect, 0.99) * float64(span))
			part = min(part, behind)
			done += part
			behind -= part
		}
	}
	return done, done + behind, true
}

// streamETA estimates the time a stream needs to catch up from how fast
// it covered its backlog so far in this run (in-flight rows included, so a
// long window in flight has an ETA before the watermark moves), or from
// its watermark's speed before that.
func streamETA(s source.Snapshot, now time.Time) (time.Duration, bool) {
	if s.CaughtUp {
		return 0, true
	}
	done, total, started := runPart(s)
	el := now.Sub(s.Started)
	if !started || done <= 0 || el <= 0 {
		return s.ETA(now)
	}
	return time.Duration(float64(total-done) / float64(done) * float64(el)), true
}

// percent is done of total in percent, 100 for nothing to do.
func percent(done, total time.Duration) float64 {
	if total <= 0 {
		return 100
	}
	return math.Min(100, 100*float64(done)/float64(total))
}

// Sources returns the progress of every source at now, in the catalog's
// order: its streams' backlog covered since this run started, the rate
// delivered over the last seconds and the longest ETA of its streams.
func (p *Reporter) Sources(now time.Time) []SourceProgress {
	type agg struct {
		done, total time.Duration
		starting    bool
		caught      bool
		eta         time.Duration
		etaKnown    bool
		delivered   int64
	}
	acked := p.acked.States()
	bySource := map[string]*agg{}
	for _, s := range p.snapshots() {
		a := bySource[s.Stream.Source]
		if a == nil {
			a = &agg{caught: true, etaKnown: true}
			bySource[s.Stream.Source] = a
		}
		a.delivered += acked[s.Stream].Delivered
		done, total, started := runPart(s)
		if !started {
			a.starting = true
		}
		a.done += done
		a.total += total
		a.caught = a.caught && s.CaughtUp
		if eta, ok := streamETA(s, now); ok {
			a.eta = max(a.eta, eta)
		} else {
			a.etaKnown = false
		}
	}
	if p.rates == nil {
		p.rates = map[string]*rateWindow{}
	}
	var out []SourceProgress
	for _, spec := range catalog.Specs() {
		a := bySource[spec.Name]
		if a == nil {
			continue
		}
		r := p.rates[spec.Name]
		if r == nil {
			r = &rateWindow{}
			p.rates[spec.Name] = r
		}
		sp := SourceProgress{Source: spec.Name, RowsPerSecond: r.add(now, a.delivered), CaughtUp: a.caught && !a.starting,
			ETA: a.eta, ETAKnown: a.etaKnown}
		switch {
		case a.starting:
			sp.Percent, sp.ETAKnown = 0, false
		case sp.CaughtUp:
			sp.Percent = 100
		default:
			sp.Percent = percent(a.done, a.total)
		}
		out = append(out, sp)
	}
	return out
}

// overall is the progress of every stream together, for the progress log
// line: the percent of this run's backlog done (one decimal) and the
// longest ETA ("unknown" while a stream has none).
func overall(snaps []source.Snapshot, now time.Time) (float64, string) {
	var done, total, eta time.Duration
	known := true
	for _, s := range snaps {
		d, t, started := runPart(s)
		if !started {
			return 0, "unknown"
		}
		done += d
		total += t
		if e, ok := streamETA(s, now); ok {
			eta = max(eta, e)
		} else {
			known = false
		}
	}
	pct := math.Round(percent(done, total)*10) / 10
	if !known {
		return pct, "unknown"
	}
	return pct, eta.Round(time.Second).String()
}

// rateWindow is a rate over the last few seconds of a growing count.
type rateWindow struct {
	at    []time.Time
	count []int64
}

// rateSpan is how far back a rate looks.
const rateSpan = 5 * time.Second

// add records count at now and returns the rate per second since the
// oldest sample within rateSpan.
func (r *rateWindow) add(now time.Time, count int64) float64 {
	r.at = append(r.at, now)
	r.count = append(r.count, count)
	i := 0
	for i < len(r.at)-2 && now.Sub(r.at[i+1]) >= rateSpan {
		i++
	}
	r.at, r.count = r.at[i:], r.count[i:]
	el := now.Sub(r.at[0]).Seconds()
	if el <= 0 {
		return 0
	}
	return float64(count-r.count[0]) / el
}
