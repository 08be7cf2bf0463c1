package recheck

import (
	"slices"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// Plan is the schedule in force at one step of a stream: what is learnt
// at run time, apart from the settings (Config). Config.Learnt computes it
// from the delays a stream learnt (recheck: auto) at every step;
// Config.Plan is that of fixed points; the zero Plan has no settings and
// rechecks nothing. Due, Pending, NextDue, Expired and Recover read a
// window log under it.
//
// # Due times
//
// A logged window stores when it is next due (cursor.LoggedWindow.Due),
// set every time it is asked (Entry, Asked, Recovered) from the plan in
// force then: its end plus the plan's first point after the ask. A later
// plan may bring a window's due earlier, when it has a point sooner, and
// never later: a window is due at the earlier of its stored due and the
// plan's first point after its last ask (CONTRACT C3: a record may become
// visible hours after its time, and a window promised a point is asked by
// then, whatever is learnt meanwhile). Nor does a new plan mark a window
// done while its stored due is still to come. Only the settings end a
// window's points: the horizon (Config.HorizonOrDefault), which lies past
// every point of every plan.
type Plan struct {
	// Points are the recheck points in force: durations after a window's
	// end, ascending and positive. For fixed points the configured ones
	// (Config.Offsets); learnt ones otherwise (the sparse points of
	// Learnt).
	Points []time.Duration
	// Dense and Cadence are Learnt's: windows that ended less than Dense
	// ago are counted again at every sweep, one every Cadence. Zero for
	// fixed points.
	Dense, Cadence time.Duration
	// Sweep is set by the caller for a step that sweeps (Due then returns
	// the windows of the dense phase too, with the windows whose point is
	// due).
	Sweep bool
	// Polled is when the stream's latest fresh poll that re-covered the
	// late phase began (Recover; zero: none), set by the caller like
	// Sweep: a window that poll left out (past its page) is swept even
	// when it was asked less than a cadence ago, and one it re-covered is
	// not.
	Polled time.Time

	cfg Config
}

// Config returns the settings the plan was made from.
func (p Plan) Config() Config { return p.cfg }

// Auto reports whether the plan's points are learnt (Config.Auto).
func (p Plan) Auto() bool { return p.cfg.Auto }

// next is the first point of the plan after passed (how long after its
// end a window was last asked), and false when no point is.
func (p Plan) next(passed time.Duration) (time.Duration, bool) {
	i, _ := slices.BinarySearchFunc(p.Points, passed, func(o, d time.Duration) int {
		if o <= d {
			return -1
		}
		return 1
	})
	if i == len(p.Points) {
		return 0, false
	}
	return p.Points[i], true
}

// dueAt is when w's next recheck is due, and false when it has none left:
// the earlier of its stored due and the plan's first point after its last
// ask (see Plan).
func (p Plan) dueAt(w cursor.LoggedWindow) (time.Time, bool) {
	at, ok := w.Due, !w.Due.IsZero()
	if o, has := p.next(w.Passed); has {
		if d := w.End.Add(o); !ok || d.Before(at) {
			at, ok = d, true
		}
	}
	return at, ok
}

// Asked returns w, just asked (its Passed says when), with the due time
// of the plan: its end plus the plan's first point after Passed, zero when
// none is left. The caller stores what it returns whenever it stores an
// entry it asked: a narrowing's or an edge compare's (Settle), a window
// narrowed below its bounds.
func (p Plan) Asked(w cursor.LoggedWindow) cursor.LoggedWindow {
	w.Due = time.Time{}
	if o, ok := p.next(w.Passed); ok {
		w.Due = w.End.Add(o)
	}
	return w
}

// Settle returns r with the due time of the plan on every entry it stores
// (Asked): a unit's result is stored with the plan in force when it
// settles.
func (p Plan) Settle(r Result) Result {
	r.Keep = slices.Clone(r.Keep)
	for i := range r.Keep {
		r.Keep[i].Entry = p.Asked(r.Keep[i].Entry)
	}
	r.Refetch = slices.Clone(r.Refetch)
	for i := range r.Refetch {
		r.Refetch[i].Entry = p.Asked(r.Refetch[i].Entry)
	}
	return r
}

// Entry is the log entry of a window just fetched for the first time,
// with the first page's totalRows (core) or the rows and digest delivered
// (edge, digest non-empty), asked at fetchedAt: the recheck points before
// it are passed already, and it is due at the plan's first point after.
// A window fetched a day after its end (a backfill) has nothing left to
// recheck, and rechecking it would cost a request for nothing.
func (p Plan) Entry(start, end time.Time, count int64, digest string, fetchedAt time.Time) cursor.LoggedWindow {
	return p.Asked(cursor.LoggedWindow{Start: start, End: end, Count: count, Digest: digest, FetchedAt: fetchedAt, Passed: max(fetchedAt.Sub(end), 0)})
}

// Load returns log as read from the checkpoint, each entry stored without
// a due time (by a version that kept none) given the due of the plan from
// its Passed, as if it had been asked under this plan: an upgrade keeps
// every point still to come.
func (p Plan) Load(log []cursor.LoggedWindow) []cursor.LoggedWindow {
	out := slices.Clone(log)
	for i, w := range out {
		if w.Due.IsZero() {
			out[i] = p.Asked(w)
		}
	}
	return out
}

// Done reports whether w has no recheck left: no stored due, and no point
// of the plan after its last ask. Such an entry only the horizon removes,
// and a poller need not write it at all.
func (p Plan) Done(w cursor.LoggedWindow) bool {
	_, ok := p.dueAt(w)
	return !ok
}

// Last is the plan's last point, 0 when there is none.
func (p Plan) Last() time.Duration {
	if len(p.Points) == 0 {
		return 0
	}
	return p.Points[len(p.Points)-1]
}
