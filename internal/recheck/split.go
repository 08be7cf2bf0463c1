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
// log does not. Use it like a Narrowing:
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
	f       Refetch
	cfg     Config
	final   bool
	budget  int
	bounds  []time.Time // cell i is [bounds[i], bounds[i+1])
	prefix  []int64     // prefix[i]: delivered in cells [0, i)
	queue   []node
	res     WindowResult
	counted map[[2]int]bool
	kept    int64 // the counts of the parts kept
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
	if want := int((end.Sub(first) + time.Minute - 1) / time.Minute); len(delivered) != want || want < 2 {
		return nil, false
	}
	n := &WindowNarrowing{f: f, cfg: cfg, final: final, budget: budget, counted: map[[2]int]bool{}}
	n.bounds = make([]time.Time, 0, len(delivered)+1)
	n.bounds = append(n.bounds, start)
	for i := 1; i < len(delivered); i++ {
		n.bounds = append(n.bounds, first.Add(time.Duration(i)*time.Minute))
	}
	n.bounds = append(n.bounds, end)
	n.prefix = make([]int64, len(delivered)+1)
	for i, c := range delivered {
		n.prefix[i+1] = n.prefix[i] + c
	}
	if n.prefix[len(delivered)] < stored {
		return nil, false
	}
	// The window's count was just asked (Unit.Narrow): it is the root's.
	n.decide(0, len(delivered), f.Entry.Count, f.Counted)
	return n, true
}

// delivered is what the stream delivered in cells [i, j).
func (n *WindowNarrowing) delivered(i, j int) int64 { return n.prefix[j] - n.prefix[i] }

// Next returns the next range to count, and false when the narrowing is
// done. It returns the same range until Observe is called.
func (n *WindowNarrowing) Next() (Query, bool) {
	if len(n.queue) == 0 {
		return Query{}, false
	}
	q := n.queue[0]
	return Query{Start: n.bounds[q.i], End: n.bounds[q.j], Stored: n.delivered(q.i, q.j)}, true
}

// Observe takes the count of the range Next returned (a negative count
// reads as 0). It reports whether that very range is to be fetched again
// whole (its count request's first page starts the fetch).
func (n *WindowNarrowing) Observe(count int64) (refetchThis bool) {
	if len(n.queue) == 0 {
		return false
	}
	q := n.queue[0]
	n.queue = n.queue[1:]
	n.res.Requests++
	c := max(count, 0)
	refetchThis = n.decide(q.i, q.j, c, true)
	if q.derive {
		// The right half is the parent's count minus the left's: a record
		// that arrived in the left half in between makes it smaller than
		// the truth, which only keeps the stored count below what was
		// delivered (found at the next point); never so at the last one.
		n.decide(q.j, q.sibJ, max(q.parentC1-c, 0), false)
	}
	return refetchThis
}

// Cap stops the narrowing: the ranges still waiting for a count are
// fetched again whole (the budget or the time ran out).
func (n *WindowNarrowing) Cap() {
	for _, q := range n.queue {
		if q.derive {
			// The parent's count covers both halves.
			n.part(q.i, q.sibJ, q.parentC1, false)
			continue
		}
		n.part(q.i, q.j, -1, false)
	}
	if len(n.queue) > 0 {
		n.res.Capped = true
	}
	n.queue = nil
}

// decide settles cells [i, j), whose count is now c, or splits them. It
// reports whether the range is to be fetched again whole.
func (n *WindowNarrowing) decide(i, j int, c int64, counted bool) bool {
	d := n.delivered(i, j)
	switch {
	case c == d:
		n.kept += c
		return false
	case j-i == 1, c <= n.cfg.RefetchRows:
		n.part(i, j, c, counted)
		return true
	}
	need := 1
	if n.final {
		need = 2
	}
	if n.res.Requests+len(n.queue)+need > n.budget {
		n.res.Capped = true
		n.part(i, j, c, counted)
		return true
	}
	// Split where the delivered records divide in two halves: the
	// records of a window are rarely spread evenly over its time.
	half := n.prefix[i] + d/2
	k, _ := slices.BinarySearch(n.prefix[i+1:j], half)
	k = min(max(k+i+1, i+1), j-1)
	if n.final {
		n.queue = append(n.queue, node{i: i, j: k}, node{i: k, j: j})
	} else {
		n.queue = append(n.queue, node{i: i, j: k, derive: true, sibJ: j, parentC1: c})
	}
	return false
}

// part marks cells [i, j) to be fetched again; c < 0: not counted (a
// capped range at the last point), its count unknown, so the window's
// update is dropped.
func (n *WindowNarrowing) part(i, j int, c int64, counted bool) {
	n.res.Parts = append(n.res.Parts, Part{Start: n.bounds[i], End: n.bounds[j], Count: c, Delivered: n.delivered(i, j), Counted: counted && c >= 0})
}

// Done reports whether the narrowing has nothing left to count.
func (n *WindowNarrowing) Done() bool { return len(n.queue) == 0 }

// Result returns what the narrowing decided; call it when Next returns
// false.
func (n *WindowNarrowing) Result() WindowResult {
	r := n.res
	r.Parts = slices.Clone(r.Parts)
	slices.SortFunc(r.Parts, func(a, b Part) int { return a.Start.Compare(b.Start) })
	total, known := n.kept, true
	for _, p := range r.Parts {
		if p.Count < 0 {
			known = false
		}
		total += max(p.Count, 0)
	}
	if known && len(n.queue) == 0 {
		up := n.f.Update
		up.Entry.Count = total
		r.Update = up
	}
	return r
}
