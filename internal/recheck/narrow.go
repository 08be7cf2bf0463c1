package recheck

import (
	"slices"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// Query is one count request of a narrowing: the first page of the search
// over [Start, End), whose totalRows is the range's count (C3).
type Query struct {
	Start, End time.Time
	// Stored is what the log (or, below a window, the delivered set) holds
	// of the range: the caller asks a range larger than
	// Config.RefetchRows for its count only (Config.CountOnly), since
	// such a range is narrowed, never fetched whole from this page.
	Stored int64
}

// CountOnly reports whether q is asked only for its count (totalRows,
// C3): its range holds more than RefetchRows, so a growth there is
// narrowed further, never fetched from this answer. Such a request asks
// for as few fields as the API allows (C3 returns), so that the server
// serves no full rows to count; its page is never delivered, and a range
// it finds to refetch asks its own first page.
func (c Config) CountOnly(q Query) bool { return q.Stored > c.RefetchRows }

// Update replaces the log entries that start at Replaces (Entry.Start
// among them) with Entry: cursor.WindowChanges{Delete: Replaces, Put:
// {Entry}}.
type Update struct {
	Entry    cursor.LoggedWindow
	Replaces []time.Time
}

// Refetch is a range to fetch again whole, like a new window, because its
// count changed. Its Update is stored when the fetch's pages are
// acknowledged, never before: until then the log keeps the old count, so a
// crash only means the range is found changed again.
type Refetch struct {
	Update
	// Grew is the count now minus the stored count. It is negative for a
	// range of several windows whose count fell: a fall there may hide a
	// growth elsewhere in it, and one page settles it.
	Grew int64
	// Counted: the range was itself the subject of a count request, whose
	// first page is the first page of this fetch: deliver it and follow
	// its nextPage (valid for 24 hours, C3) rather than ask again; a first
	// page that held every row (rows == totalRows) is the whole refetch.
	Counted bool
}

// Start is the start of the range to fetch.
func (r Refetch) Start() time.Time { return r.Entry.Start }

// End is the end of the range to fetch.
func (r Refetch) End() time.Time { return r.Entry.End }

// Shrink is a range whose count fell since it was fetched (retention,
// deletion): logged and counted, never "fixed". The log stores the new
// count so that a later growth shows.
type Shrink struct {
	Start, End    time.Time
	Before, After int64
}

// Result is what a recheck of one unit decided.
type Result struct {
	// Requests is how many count requests it made (the edge compare: 1).
	Requests int
	// Keep are the log updates to store at once: windows whose count did
	// not change (asked at the unit's At: their points before it are
	// passed) or fell.
	Keep []Update
	// Refetch are the ranges to fetch again, oldest first.
	Refetch []Refetch
	// Shrunk are the ranges whose count fell.
	Shrunk []Shrink
	// Recovered is the sum of the growth of the refetched ranges: records
	// the platform made visible after the window was fetched.
	Recovered int64
	// Refetched is how many rows the ranges fetched again held, as
	// counted (filled by the poller, which may narrow a grown window
	// below its bounds, WindowNarrowing): what recovering Recovered cost.
	Refetched int64
	// Capped: MaxRequests stopped the narrowing; some ranges are fetched
	// whole that narrowing would have cut.
	Capped bool
	// Final: the unit held a window at its last recheck point (Unit.Final):
	// what it recovered was late beyond every earlier point, and what
	// arrives after it is not asked for again.
	Final bool
}

// Windows is how many log windows the result covers.
func (r Result) Windows() int {
	n := 0
	for _, k := range r.Keep {
		n += len(k.Replaces)
	}
	for _, f := range r.Refetch {
		n += len(f.Replaces)
	}
	return n
}

// Grown is how many refetched ranges grew.
func (r Result) Grown() int {
	n := 0
	for _, f := range r.Refetch {
		if f.Grew > 0 {
			n++
		}
	}
	return n
}

// Narrowing finds the changed parts of a core unit with count requests
// (see the package doc for the cost): the one bisection of the package
// over the unit's windows and their stored counts, split by index. Use it
// as
//
//	n := unit.Narrow()
//	for q, ok := n.Next(); ok; q, ok = n.Next() {
//		count, err := firstPageTotalRows(q.Start, q.End) // one request
//		...
//		n.Observe(count)
//	}
//	res := n.Result()
//
// A Narrowing is not safe for concurrent use.
type Narrowing struct {
	b    bisection
	u    Unit
	res  Result
	keep []Update
}

// Narrow starts the narrowing of a core unit.
func (u Unit) Narrow() *Narrowing {
	ws := u.Windows
	n := &Narrowing{u: u}
	prefix := make([]int64, len(ws)+1)
	for i, w := range ws {
		prefix[i+1] = prefix[i] + w.Count
	}
	bound := func(i int) time.Time {
		if i == len(ws) {
			return ws[i-1].End
		}
		return ws[i].Start // the windows are adjacent
	}
	n.b = bisection{cells: prefixSum{prefix: prefix, bound: bound}, rule: byIndex,
		rows: u.cfg.RefetchRows, budget: u.cfg.MaxRequests, final: u.Final, pol: n}
	n.b.ask(0, len(ws))
	return n
}

// Next returns the next range to count, and false when the narrowing is
// done. It returns the same range until Observe is called.
func (n *Narrowing) Next() (Query, bool) { return n.b.next() }

// Observe takes the count of the range Next returned (a negative count
// reads as 0). It reports whether that very range is to be fetched again
// whole: the caller may deliver the first page it holds and follow its
// chain (Refetch.Counted). Without a range outstanding it does nothing.
func (n *Narrowing) Observe(count int64) (refetchThis bool) { return n.b.observe(count) }

// same keeps windows [i, j), unchanged, asked at the unit's At.
func (n *Narrowing) same(i, j int, _ int64) { n.keepAll(i, j) }

// settle: windows [i, j) grew, or fell from ref to c. A growth is
// fetched again; a fall is stored with the new count, so that a later
// growth shows, except in a range of several windows small enough to
// fetch: a fall there may hide a growth elsewhere in it, and one page
// settles it. A unit is never stopped (its caller abandons it instead:
// its windows keep their counts and are due again), so c is known.
func (n *Narrowing) settle(i, j int, c, ref int64, counted bool, why settled) bool {
	switch {
	case c > ref:
		n.refetch(i, j, c, c-ref, counted)
		return true
	case why == settledSmall:
		n.shrink(i, j, ref, c, false)
		n.refetch(i, j, c, c-ref, counted)
		return true
	}
	n.shrink(i, j, ref, c, true)
	return false
}

// checked is when w was last asked once this recheck is stored: the
// unit's At (or later, should the entry say so).
func (n *Narrowing) checked(w cursor.LoggedWindow) time.Time {
	if c := w.Checked(); c.After(n.u.At) {
		return c
	}
	return n.u.At
}

// passed is w.Passed once this recheck is stored.
func (n *Narrowing) passed(w cursor.LoggedWindow) time.Duration {
	return max(n.checked(w).Sub(w.End), 0)
}

func (n *Narrowing) keepAll(i, j int) {
	for _, w := range n.u.Windows[i:j] {
		w.Passed = n.passed(w)
		n.keep = append(n.keep, Update{Entry: w, Replaces: []time.Time{w.Start}})
	}
}

// merged is the one entry replacing windows [i, j) with count c1.
func (n *Narrowing) merged(i, j int, c1 int64, fetchedAt time.Time) Update {
	ws := n.u.Windows[i:j]
	e := cursor.LoggedWindow{Start: ws[0].Start, End: ws[len(ws)-1].End, Count: c1, FetchedAt: fetchedAt}
	// The merged entry was asked when the earliest asked of its windows
	// was: a later point of any of them is not passed.
	checked := n.checked(ws[0])
	starts := make([]time.Time, len(ws))
	for x, w := range ws {
		starts[x] = w.Start
		if c := n.checked(w); c.Before(checked) {
			checked = c
		}
	}
	e.Passed = max(checked.Sub(e.End), 0)
	if len(ws) == 1 {
		e.Digest = ws[0].Digest
	}
	return Update{Entry: e, Replaces: starts}
}

func (n *Narrowing) refetch(i, j int, c1, grew int64, counted bool) {
	n.res.Refetch = append(n.res.Refetch, Refetch{Update: n.merged(i, j, c1, n.u.At), Grew: grew, Counted: counted})
	if grew > 0 {
		n.res.Recovered += grew
	}
}

// shrink records that [i, j) fell from c0 to c1; with store, its entry
// (merged when it spans several windows) takes the new count.
func (n *Narrowing) shrink(i, j int, c0, c1 int64, store bool) {
	n.res.Shrunk = append(n.res.Shrunk, Shrink{Start: n.u.Windows[i].Start, End: n.u.Windows[j-1].End, Before: c0, After: c1})
	if store {
		fetched := n.u.Windows[i].FetchedAt
		if j-i > 1 {
			fetched = n.u.At
		}
		n.keep = append(n.keep, n.merged(i, j, c1, fetched))
	}
}

// Done reports whether the narrowing has nothing left to count.
func (n *Narrowing) Done() bool { return n.b.done() }

// Result returns what the narrowing decided; call it when Next returns
// false (before, it covers only the ranges settled so far).
func (n *Narrowing) Result() Result {
	r := n.res
	r.Requests, r.Capped, r.Final = n.b.requests, n.b.capped, n.u.Final
	r.Keep = slices.Clone(n.keep)
	slices.SortFunc(r.Keep, func(a, b Update) int { return a.Entry.Start.Compare(b.Entry.Start) })
	r.Refetch = slices.Clone(r.Refetch)
	slices.SortFunc(r.Refetch, func(a, b Refetch) int { return a.Entry.Start.Compare(b.Entry.Start) })
	r.Shrunk = slices.Clone(r.Shrunk)
	slices.SortFunc(r.Shrunk, func(a, b Shrink) int { return a.Start.Compare(b.Start) })
	return r
}
