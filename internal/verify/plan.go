package verify

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Day is 24 hours: targets are cut at UTC midnights.
const Day = 24 * time.Hour

// Defaults of Limits.
const (
	// DefaultMaxHistory is how far back searches reach (C3: 92 days).
	DefaultMaxHistory = 92 * Day
	// DefaultCountCap is where totalRows may be capped (C3: treat 500,000
	// or more as maybe truncated).
	DefaultCountCap = 500_000
	// DefaultEdgeMaxRows is the edge API's max_rows (C6).
	DefaultEdgeMaxRows = 10_000
)

// StreamInfo is what the plan knows of one stream.
type StreamInfo struct {
	Stream record.Stream
	// Edge: an edge source, counted by fetching its rows (C6).
	Edge bool
	// Start is where the stream began collecting: the start its
	// checkpoint keeps (cursor.Cursor.Start), or, for a checkpoint written
	// before it kept one, sources.*.start when that is a time; zero when
	// unknown (such a checkpoint and a relative start: relative to a first
	// run it did not keep). Verify never guesses it: a stream whose start
	// is unknown is verified only from --from.
	Start time.Time
	// State is the stream's committed checkpoint state: Watermark bounds
	// what is verified, Density estimates the rows.
	State checkpoint.State
	// Windows is the stream's window log: counts to estimate rows with,
	// and the windows still waiting for a recheck.
	Windows []cursor.LoggedWindow
	// RecheckLast is the stream's last recheck point
	// (sources.<name>.recheck, recheck.Config.Last); 0:
	// Limits.RecheckLast.
	RecheckLast time.Duration
}

// Filter is what the command asks for; zero fields select everything.
type Filter struct {
	Source, Account string
	// From and To bound the verified time; zero From is the stream's
	// start, zero To its watermark (To never passes the watermark).
	From, To time.Time
}

// Limits are the API's limits and the clock the plan works with.
type Limits struct {
	// Now is the time of the plan: searches reach back MaxHistory from it.
	Now time.Time
	// MaxHistory: default DefaultMaxHistory.
	MaxHistory time.Duration
	// CountCap: default DefaultCountCap.
	CountCap int64
	// EdgeMaxRows: default DefaultEdgeMaxRows.
	EdgeMaxRows int64
	// RecheckLast is the last recheck point (of sources.*.recheck): a
	// logged window last asked less than this long after its end
	// (cursor.LoggedWindow.Passed) still has a recheck to come.
	RecheckLast time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxHistory <= 0 {
		l.MaxHistory = DefaultMaxHistory
	}
	if l.CountCap <= 0 {
		l.CountCap = DefaultCountCap
	}
	if l.EdgeMaxRows <= 0 {
		l.EdgeMaxRows = DefaultEdgeMaxRows
	}
	return l
}

// Target is one (stream, UTC day) to verify: the part [Start, End) of the
// day that lies in the verified range.
type Target struct {
	Stream record.Stream
	Edge   bool
	// Day is the day's midnight, UTC.
	Day        time.Time
	Start, End time.Time
	// EstRows estimates the day's rows (-1: unknown).
	EstRows int64
	// Parts is how many windows the day is counted in: its requests.
	Parts int
	// Pending counts the logged windows of the day that still have a
	// recheck to come: a gap there may yet close.
	Pending int
	// Rechecked are those pending windows (whole, with the count logged
	// at their fetch): a gap closes only if one of them grew since (C3:
	// late data), which Run asks when the day has a gap.
	Rechecked []cursor.LoggedWindow
}

// Key names the target's (stream, day).
func (t Target) Key() Key { return Key{Stream: t.Stream, Day: t.Day} }

// Key is one (stream, UTC day).
type Key struct {
	Stream record.Stream
	Day    time.Time
}

// Plan is the list of targets and what asking them costs.
type Plan struct {
	Targets []Target
	// Requests is the estimated number of API requests: the targets'
	// parts (more when an answer turns out cut).
	Requests int
	// Notes say what the plan left out or assumed, one line each.
	Notes []string
}

// NewPlan makes the plan for streams under f. Streams come sorted, their
// days in order; a stream without a watermark, or whose range is empty, is
// left out with a note; days before the API's history are cut off with a
// note.
func NewPlan(streams []StreamInfo, f Filter, l Limits) Plan {
	l = l.withDefaults()
	streams = slices.Clone(streams)
	slices.SortFunc(streams, func(a, b StreamInfo) int {
		return cmp.Or(cmp.Compare(a.Stream.Tenant, b.Stream.Tenant), cmp.Compare(a.Stream.Source, b.Stream.Source), cmp.Compare(a.Stream.Account, b.Stream.Account))
	})
	var p Plan
	oldest := l.Now.Add(-l.MaxHistory).Add(time.Minute) // a minute of slack: the API refuses older
	for _, s := range streams {
		if (f.Source != "" && s.Stream.Source != f.Source) || (f.Account != "" && s.Stream.Account != f.Account) {
			continue
		}
		wm := s.State.Watermark
		if wm.IsZero() {
			p.Notes = append(p.Notes, fmt.Sprintf("%s: no watermark committed yet: nothing to verify", s.Stream))
			continue
		}
		from, to := f.From, wm
		if from.IsZero() {
			from = s.Start
		}
		if from.IsZero() {
			// A guess would be no proof: a start before the real one
			// reports the time never collected as gaps, a later one
			// leaves days out.
			p.Notes = append(p.Notes, fmt.Sprintf("%s: where the stream began is unknown (its checkpoint was written by a collector that did not keep it, and sources.%s.start is relative): not verified; give --from", s.Stream, s.Stream.Source))
			continue
		}
		if !f.To.IsZero() && f.To.Before(to) {
			to = f.To
		}
		if from.Before(oldest) {
			p.Notes = append(p.Notes, fmt.Sprintf("%s: the API reaches back to %s only (C3): verifying from there", s.Stream, oldest.UTC().Format(time.RFC3339)))
			from = oldest
		}
		if !to.After(from) {
			p.Notes = append(p.Notes, fmt.Sprintf("%s: nothing committed in [%s, %s)", s.Stream, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339)))
			continue
		}
		for d := from.UTC().Truncate(Day); d.Before(to); d = d.Add(Day) {
			t := Target{Stream: s.Stream, Edge: s.Edge, Day: d, Start: maxTime(d, from.UTC()), End: minTime(d.Add(Day), to.UTC())}
			last := l.RecheckLast
			if s.RecheckLast > 0 {
				last = s.RecheckLast
			}
			t.EstRows, t.Rechecked = estimate(s, t.Start, t.End, last)
			t.Pending = len(t.Rechecked)
			t.Parts = parts(t, l)
			p.Requests += t.Parts
			p.Targets = append(p.Targets, t)
		}
	}
	return p
}

// estimate returns the rows of [start, end) as the window log says where
// it covers the range and as the density says elsewhere (-1 when neither
// knows), and the logged windows of the range that have a recheck to come.
func estimate(s StreamInfo, start, end time.Time, last time.Duration) (rows int64, pending []cursor.LoggedWindow) {
	var covered time.Duration
	var logged float64
	for _, w := range s.Windows {
		a, b := maxTime(w.Start, start), minTime(w.End, end)
		if !b.After(a) {
			continue
		}
		covered += b.Sub(a)
		logged += float64(w.Count) * float64(b.Sub(a)) / float64(w.End.Sub(w.Start))
		if w.Passed < last {
			pending = append(pending, w)
		}
	}
	rest := end.Sub(start) - covered
	switch {
	case rest <= 0:
	case s.State.Density > 0:
		logged += s.State.Density * rest.Hours()
	case covered == 0:
		return -1, pending
	}
	return int64(math.Ceil(logged)), pending
}

// parts is how many windows t is counted in: one unless its rows may reach
// what one answer can hold (half of it, for the margin an estimate needs).
func parts(t Target, l Limits) int {
	limit := l.CountCap / 2
	if t.Edge {
		limit = l.EdgeMaxRows / 2
	}
	if t.EstRows <= limit || limit <= 0 {
		return 1
	}
	return int((t.EstRows + limit - 1) / limit)
}

// Windows cuts t into its Parts windows of equal length (whole
// milliseconds, the precision of the APIs' times).
func (t Target) Windows() [][2]time.Time {
	n := max(t.Parts, 1)
	step := (t.End.Sub(t.Start) / time.Duration(n)).Truncate(time.Millisecond)
	out := make([][2]time.Time, 0, n)
	for i := range n {
		a := t.Start.Add(time.Duration(i) * step)
		b := a.Add(step)
		if i == n-1 || step <= 0 {
			b = t.End
		}
		out = append(out, [2]time.Time{a, b})
		if b.Equal(t.End) {
			break
		}
	}
	return out
}

// String is the dry run: what will be asked and what it costs.
func (p Plan) String() string {
	var b strings.Builder
	streams := map[record.Stream]bool{}
	for _, t := range p.Targets {
		streams[t.Stream] = true
	}
	fmt.Fprintf(&b, "verify %d (stream, day) of %d streams: about %d API requests\n", len(p.Targets), len(streams), p.Requests)
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
