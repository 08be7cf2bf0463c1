package recheck

import (
	"slices"
	"time"
)

// prefixSum is what a bisection narrows: cells in time order, cell i
// spanning [bound(i), bound(i+1)), with the prefix of their reference
// counts (what the log stored of each window of a unit, or what the
// stream delivered in each minute of a window). A range's reference is
// what its count is compared with.
type prefixSum struct {
	// prefix[i] is the reference count of cells [0, i); there are
	// len(prefix)-1 cells.
	prefix []int64
	// bound returns the start of cell i, and for i = len(prefix)-1 the
	// end of the last one.
	bound func(i int) time.Time
}

// cells is how many cells p holds.
func (p prefixSum) cells() int { return len(p.prefix) - 1 }

// ref is the reference count of cells [i, j).
func (p prefixSum) ref(i, j int) int64 { return p.prefix[j] - p.prefix[i] }

// splitRule says where a range of cells splits in two.
type splitRule int

const (
	// byIndex halves the cells: the old counts of the halves add up
	// whatever they hold (a unit's windows).
	byIndex splitRule = iota
	// byReference splits where the reference divides in two: the records
	// of a window are rarely spread evenly over its time.
	byReference
)

// split returns where [i, j), of at least two cells, splits: i < k < j.
func (p prefixSum) split(rule splitRule, i, j int) int {
	if rule == byIndex {
		return (i + j) / 2
	}
	half := p.prefix[i] + p.ref(i, j)/2
	k, _ := slices.BinarySearch(p.prefix[i+1:j], half)
	return min(max(k+i+1, i+1), j-1)
}

// settled says why a changed range is narrowed no further.
type settled int

const (
	settledOneCell settled = iota // a single cell: nothing to split
	settledSmall                  // at most Config.RefetchRows: fetching costs no more than narrowing
	settledCapped                 // the request budget would be exceeded
	settledStopped                // the narrowing was stopped (bisection.stop) before its count came
)

// policy is where the two uses of a bisection differ: what a range
// yields once its count is known. A Narrowing yields log updates,
// refetches and shrinks; a WindowNarrowing yields parts.
type policy interface {
	// same: cells [i, j) count c, what their reference holds.
	same(i, j int, c int64)
	// settle: cells [i, j) count c (negative: unknown, only when why is
	// settledStopped), not ref, and are narrowed no further (why). counted: c
	// is the answer of a count request of this very range, whose first
	// page starts its refetch. It reports whether the range is to be
	// fetched again whole.
	settle(i, j int, c, ref int64, counted bool, why settled) bool
}

// bisection is the one narrowing state machine behind Narrowing and
// WindowNarrowing (see the package doc for what it costs and why). A
// range whose count differs from its reference is split (rule) and its
// halves go down the queue: before the last point the left half is
// counted and the right half's count derived from the parent's; at the
// last point both are counted. A range of one cell, of at most rows
// counted rows, or past the budget of count requests is settled by the
// policy.
type bisection struct {
	cells  prefixSum
	rule   splitRule
	rows   int64
	budget int
	final  bool
	pol    policy

	queue    []node // ranges waiting for their count, first first
	requests int
	capped   bool
}

// node is a range [i, j) of cells waiting for its count.
type node struct {
	i, j int
	// After this node's count, its right sibling [j, sibJ) gets the
	// parent's count minus this one (derive).
	derive  bool
	sibJ    int
	parentC int64
}

// ask queues cells [i, j) for a count request.
func (b *bisection) ask(i, j int) { b.queue = append(b.queue, node{i: i, j: j}) }

// next returns the range waiting for its count, and false when none does.
func (b *bisection) next() (Query, bool) {
	if len(b.queue) == 0 {
		return Query{}, false
	}
	q := b.queue[0]
	return Query{Start: b.cells.bound(q.i), End: b.cells.bound(q.j), Stored: b.cells.ref(q.i, q.j)}, true
}

// observe takes the count of the range next returned (a negative count
// reads as 0) and reports whether that very range is to be fetched again
// whole. Without a range outstanding it does nothing.
func (b *bisection) observe(count int64) (refetchThis bool) {
	if len(b.queue) == 0 {
		return false
	}
	q := b.queue[0]
	b.queue = b.queue[1:]
	b.requests++
	c := max(count, 0)
	refetchThis = b.decide(q.i, q.j, c, true)
	if q.derive {
		// Records that arrived in this half after the parent was counted
		// make the difference smaller than the truth, even negative; 0
		// keeps a stored count at most what was delivered, and an earlier
		// point's next point finds what it hid (never so at the last
		// point, which counts both halves).
		b.decide(q.j, q.sibJ, max(q.parentC-c, 0), false)
	}
	return refetchThis
}

// decide settles cells [i, j), whose count is now c, or splits them. It
// reports whether the range is to be fetched again whole.
func (b *bisection) decide(i, j int, c int64, counted bool) bool {
	ref := b.cells.ref(i, j)
	if c == ref {
		b.pol.same(i, j, c)
		return false
	}
	need := 1
	if b.final {
		need = 2
	}
	switch {
	case j-i == 1:
		return b.pol.settle(i, j, c, ref, counted, settledOneCell)
	case c <= b.rows:
		return b.pol.settle(i, j, c, ref, counted, settledSmall)
	case b.requests+len(b.queue)+need > b.budget:
		b.capped = true
		return b.pol.settle(i, j, c, ref, counted, settledCapped)
	}
	k := b.cells.split(b.rule, i, j)
	if b.final {
		b.queue = append(b.queue, node{i: i, j: k}, node{i: k, j: j})
	} else {
		b.queue = append(b.queue, node{i: i, j: k, derive: true, sibJ: j, parentC: c})
	}
	return false
}

// stop settles every range still waiting for its count as it stands: a
// left half with its right sibling by the parent's count, a range
// counted on its own with an unknown one.
func (b *bisection) stop() {
	for _, q := range b.queue {
		if q.derive {
			b.pol.settle(q.i, q.sibJ, q.parentC, b.cells.ref(q.i, q.sibJ), false, settledStopped)
			continue
		}
		b.pol.settle(q.i, q.j, -1, b.cells.ref(q.i, q.j), false, settledStopped)
	}
	if len(b.queue) > 0 {
		b.capped = true
	}
	b.queue = nil
}

// done reports whether nothing is left to count.
func (b *bisection) done() bool { return len(b.queue) == 0 }
