package recheck

import (
	"slices"
	"sort"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// Unit is a run of adjacent log windows, all due, asked again together:
// counts add up over adjacent windows, so one request counts them all.
type Unit struct {
	// Windows are the log entries, sorted and adjacent (each one's Start is
	// the previous one's End).
	Windows []cursor.LoggedWindow
	// At is when the unit was found due: the entries its result stores
	// were asked at At (cursor.LoggedWindow.Passed), and are due again at
	// the first point after At of the plan in force when they are stored
	// (Plan.Settle).
	At time.Time
	// Final: some window of the unit makes its last recheck: no later
	// point will see what this one misses.
	Final bool

	// cfg are the settings of the plan that found the unit due: the
	// narrowing reads them (RefetchRows, MaxRequests).
	cfg Config
}

// Start is the start of the unit's first window.
func (u Unit) Start() time.Time { return u.Windows[0].Start }

// End is the end of the unit's last window.
func (u Unit) End() time.Time { return u.Windows[len(u.Windows)-1].End }

// Count is the sum of the stored counts of the unit's windows.
func (u Unit) Count() int64 { return sumCounts(u.Windows) }

// Edge reports whether the unit holds edge windows (CompareEdge) rather
// than core windows (Narrow).
func (u Unit) Edge() bool { return u.Windows[0].Edge() }

// Index returns the index in Windows of the window holding time t, or -1
// when t lies outside the unit.
func (u Unit) Index(t time.Time) int {
	i := sort.Search(len(u.Windows), func(i int) bool { return u.Windows[i].End.After(t) })
	if i == len(u.Windows) || t.Before(u.Windows[i].Start) {
		return -1
	}
	return i
}

func sumCounts(ws []cursor.LoggedWindow) int64 {
	var n int64
	for _, w := range ws {
		n += w.Count
	}
	return n
}

// sorted returns log sorted by start (a copy when it was not).
func sorted(log []cursor.LoggedWindow) []cursor.LoggedWindow {
	if slices.IsSortedFunc(log, byStart) {
		return log
	}
	log = slices.Clone(log)
	slices.SortFunc(log, byStart)
	return log
}

func byStart(a, b cursor.LoggedWindow) int { return a.Start.Compare(b.Start) }

// due reports whether w has a recheck due at now and has not expired.
func (p Plan) due(w cursor.LoggedWindow, now time.Time) bool {
	at, ok := p.dueAt(w)
	return (p.sweeps(w, now) || ok && !now.Before(at)) && !p.expired(w, now)
}

// expired reports whether w is past the horizon, a setting: no plan
// moves it.
func (p Plan) expired(w cursor.LoggedWindow, now time.Time) bool {
	return !w.End.After(p.cfg.PruneBefore(now))
}

// Due returns the units of log due at now: each run of adjacent windows
// (one's End is the next one's Start) that all have a recheck due and
// have not expired, of one kind (core or edge), cut where it would span
// more than MaxSpan or, for edge windows, hold more than half of
// EdgeMaxRows stored rows (a single window always makes a unit). log need
// not be sorted; Due does not change it.
//
// A window is due at the earlier of its stored due and the plan's first
// point after its last ask (see Plan), or at a sweep of the dense phase.
//
// Units come oldest first: a window leaves the log at End plus the
// horizon whatever its points, so the oldest window is the one closest to
// expiring without its recheck (earliest deadline first, which misses no
// deadline that any order could meet when every unit costs alike), and
// the oldest have had the most time to collect their late records, so
// their rechecks find the most per request. While the budget is short the
// newer due windows wait and merge with the windows that fall due after
// them into larger units, which costs fewer requests per window.
func (p Plan) Due(log []cursor.LoggedWindow, now time.Time) []Unit {
	if !p.cfg.Enabled() {
		return nil
	}
	log = sorted(log)
	var out []Unit
	g := -1 // start of the current run in log, -1 for none
	var rows int64
	flush := func(end int) {
		if g < 0 {
			return
		}
		u := Unit{Windows: slices.Clone(log[g:end]), At: now, cfg: p.cfg}
		for _, w := range u.Windows {
			if _, ok := p.next(now.Sub(w.End)); !ok {
				u.Final = true
			}
		}
		out = append(out, u)
		g = -1
	}
	for i, w := range log {
		if !p.due(w, now) {
			flush(i)
			continue
		}
		if g >= 0 {
			last := log[i-1]
			fits := last.End.Equal(w.Start) && last.Edge() == w.Edge() && w.End.Sub(log[g].Start) <= p.cfg.MaxSpan
			if fits && w.Edge() {
				fits = rows+w.Count <= p.cfg.EdgeMaxRows/2
			}
			if !fits {
				flush(i)
			}
		}
		if g < 0 {
			g, rows = i, 0
		}
		rows += w.Count
	}
	flush(len(log))
	return out
}

// Pending returns how many windows of log have a recheck due at now: the
// backlog the metrics and the state show.
func (p Plan) Pending(log []cursor.LoggedWindow, now time.Time) int {
	n := 0
	for _, w := range log {
		if p.due(w, now) {
			n++
		}
	}
	return n
}

// NextDue returns the earliest time a window of log falls due (at or
// before now when one is due already), and false when none ever will.
func (p Plan) NextDue(log []cursor.LoggedWindow, now time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	for _, w := range log {
		at, ok := p.dueAt(w)
		if !ok || p.expired(w, now) {
			continue
		}
		if !found || at.Before(next) {
			next, found = at, true
		}
	}
	return next, found
}

// Expired returns the windows of log past the horizon at now that still
// had a recheck point to go: rechecks the budget could not afford, or a
// configured point at or past a configured horizon (points configured
// anew over a log that kept the due times of the old ones). The caller counts them
// and prunes them (PruneBefore): a window leaves the log before its last
// point only counted.
func (p Plan) Expired(log []cursor.LoggedWindow, now time.Time) []cursor.LoggedWindow {
	if !p.cfg.Enabled() {
		return nil
	}
	var out []cursor.LoggedWindow
	for _, w := range log {
		if !p.Done(w) && p.expired(w, now) {
			out = append(out, w)
		}
	}
	return out
}
