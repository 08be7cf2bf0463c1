package recheck

import (
	"slices"
	"time"
)

// Part is a range below a logged window, found changed by a WindowNarrowing:
// it is fetched again like a refetch, without a log update of its own (the
// window's entry takes its new count once every part was fetched, see
// WindowResult.Update).
type Part struct {
	Start, End time.Time
	// Count is the range's count now (asked or derived); Delivered is
	// what the stream delivered in it, as committed.
	Count, Delivered int64
	// Counted: the range was itself the subject of a count request, whose
	// first page is the first page of its fetch (Refetch.Counted).
	Counted bool
}

// WindowResult is what the narrowing of one grown window below its
// bounds decided.
type WindowResult struct {
	// Parts are the ranges to fetch again, oldest first.
	Parts []Part
	// Update is the window's log entry to store once every part was
	// fetched to its end (never before: until then the log keeps the old
	// count, so a crash or a cut chain only means the window is found
	// grown again). Its count is the sum of the parts' counts, kept or
	// fetched, which never exceeds what was delivered.
	Update Update
	// Requests is how many count requests the narrowing made.
	Requests int
	// Capped: the request cap stopped the narrowing; some parts are
	// fetched whole that narrowing would have cut.
	Capped bool
}

// Refetched is how many rows the parts hold (as counted): what the
// recheck asks again.
func (r WindowResult) Refetched() int64 {
	var n int64
	for _, p := range r.Parts {
		n += max(p.Count, 0)
	}
	return n
}

// WindowNarrowing finds the grown parts of one logged window whose count
// grew (a Refetch of a single window), below the window's bounds: the
// delivered set of the stream (what it delivered in each minute of the
// window, as committed) holds the counts of the window's parts that the
// log does not. It is the one bisection of the package (Narrowing's) over
// the window's minutes and their delivered counts, split where the
// delivered records divide in two. Use it like a Narrowing:
//
//	n, ok := f.NarrowWindow(delivered, cfg, final, budget)
//	for q, more := n.Next(); more; q, more = n.Next() {
//		n.Observe(firstPageTotalRows(q.Start, q.End))
//	}
//	res := n.Result()
//
// A part is compared with what was delivered in it: grown when the server
// counts more, kept when it counts as many. A part that counts fewer
// (retention, or a growth hidden by a deletion) is split further and, once
// small, fetched again: a doubt resolves toward asking. A WindowNarrowing
// is not safe for concurrent use.
type WindowNarrowing struct {
	b     bisection
	f     Refetch
	parts []Part
	kept  int64 // the counts of the parts kept
}

// NarrowWindow starts the narrowing of f below its window. delivered is
// the delivered count of each minute the window touches
// (checkpoint.DB.DeliveredCounts: counts[i] for minute i from the start of
// the window's first minute, cut to the window). final: the window makes
// its last recheck point (both halves are counted, never derived; see the
// package doc). budget caps the count requests.
//
// It reports false, and f stays a refetch of the whole window, when
// narrowing cannot pay or cannot be trusted: f is not one grown window
// larger than Config.RefetchRows, the window spans a single minute, or the
// delivered set holds fewer records than the log's count when fetched
// (the window was fetched before the stream kept delivered sets).
func (f Refetch) NarrowWindow(delivered []int64, cfg Config, final bool, budget int) (*WindowNarrowing, bool) {
	stored := f.Entry.Count - f.Grew
	if len(f.Replaces) != 1 || f.Grew <= 0 || f.Entry.Count <= cfg.RefetchRows || budget < 1 {
		return nil, false
	}
	start, end := f.Start(), f.End()
	first := start.Truncate(time.Minute)
	cells := len(delivered)
	if want := int((end.Sub(first) + time.Minute - 1) / time.Minute); cells != want || want < 2 {
		return nil, false
	}
	prefix := make([]int64, cells+1)
	for i, c := range delivered {
		prefix[i+1] = prefix[i] + c
	}
	if prefix[cells] < stored {
		return nil, false
	}
	bound := func(i int) time.Time { // the window's minutes, cut to the window
		switch i {
		case 0:
			return start
		case cells:
			return end
		}
		return first.Add(time.Duration(i) * time.Minute)
	}
	n := &WindowNarrowing{f: f}
	n.b = bisection{cells: prefixSum{prefix: prefix, bound: bound}, rule: byReference,
		rows: cfg.RefetchRows, budget: budget, final: final, pol: n}
	// The window's count was just asked (Unit.Narrow): it is the root's.
	n.b.decide(0, cells, f.Entry.Count, f.Counted)
	return n, true
}

// Next returns the next range to count, and false when the narrowing is
// done. It returns the same range until Observe is called.
func (n *WindowNarrowing) Next() (Query, bool) { return n.b.next() }

// Observe takes the count of the range Next returned (a negative count
// reads as 0). It reports whether that very range is to be fetched again
// whole (its count request's first page starts the fetch).
func (n *WindowNarrowing) Observe(count int64) (refetchThis bool) { return n.b.observe(count) }

// Cap stops the narrowing: the ranges still waiting for a count are
// fetched again whole (the budget or the time ran out).
func (n *WindowNarrowing) Cap() { n.b.stop() }

// same keeps minutes [i, j): they count what was delivered in them.
func (n *WindowNarrowing) same(_, _ int, c int64) { n.kept += c }

// settle makes minutes [i, j) a part to fetch again, grown or a doubt
// alike; c < 0: not counted (a range stopped at the last point), its
// count unknown, so the window's update is dropped.
func (n *WindowNarrowing) settle(i, j int, c, ref int64, counted bool, _ settled) bool {
	n.parts = append(n.parts, Part{Start: n.b.cells.bound(i), End: n.b.cells.bound(j), Count: c, Delivered: ref, Counted: counted && c >= 0})
	return true
}

// Done reports whether the narrowing has nothing left to count.
func (n *WindowNarrowing) Done() bool { return n.b.done() }

// Result returns what the narrowing decided; call it when Next returns
// false.
func (n *WindowNarrowing) Result() WindowResult {
	r := WindowResult{Parts: slices.Clone(n.parts), Requests: n.b.requests, Capped: n.b.capped}
	slices.SortFunc(r.Parts, func(a, b Part) int { return a.Start.Compare(b.Start) })
	total, known := n.kept, true
	for _, p := range r.Parts {
		if p.Count < 0 {
			known = false
		}
		total += max(p.Count, 0)
	}
	if known && n.b.done() {
		up := n.f.Update
		up.Entry.Count = total
		r.Update = up
	}
	return r
}
