package recheck

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// narrowed is what one use of the bisection decided about a run of
// minutes, in minutes: which were fetched again, the counts the log
// stores over which ranges, and how many count requests it made.
type narrowed struct {
	fetched  []bool
	entries  [][3]int64 // first minute, end minute, stored count
	requests int
	budget   int
	below    bool // a window narrowed below its bounds
}

// minuteOf is the minute of t from t0.
func minuteOf(t time.Time) int { return int(t.Sub(t0) / time.Minute) }

// narrowAsUnit narrows the minutes as a unit of one-minute windows whose
// stored counts are ref, counting from truth; arrive runs after each
// request.
func narrowAsUnit(t *testing.T, cfg Config, ref, truth []int64, final bool, arrive func()) narrowed {
	t.Helper()
	u := unitOf(t, cfg, leaves(ref...), final)
	mt := minuteTruth{t: t, start: t0, truth: truth}
	n := u.Narrow()
	for q, ok := n.Next(); ok; q, ok = n.Next() {
		n.Observe(mt.count(q))
		arrive()
	}
	r := n.Result()
	out := narrowed{fetched: make([]bool, len(ref)), requests: r.Requests, budget: cfg.MaxRequests}
	for _, k := range r.Keep {
		out.entries = append(out.entries, [3]int64{int64(minuteOf(k.Entry.Start)), int64(minuteOf(k.Entry.End)), k.Entry.Count})
	}
	for _, f := range r.Refetch {
		out.entries = append(out.entries, [3]int64{int64(minuteOf(f.Start())), int64(minuteOf(f.End())), f.Entry.Count})
		for x := minuteOf(f.Start()); x < minuteOf(f.End()); x++ {
			out.fetched[x] = true
		}
	}
	return out
}

// narrowAsWindow narrows the minutes as one logged window whose
// delivered set is ref, as the poller does: its unit (of this one
// window) is counted, and a window found grown is narrowed below its
// bounds, or fetched whole when the narrowing declines; arrive runs after
// each request.
func narrowAsWindow(t *testing.T, cfg Config, ref, truth []int64, final bool, arrive func()) narrowed {
	t.Helper()
	m := len(ref)
	u := unitOf(t, cfg, []cursor.LoggedWindow{win(0, m, sum(ref))}, final)
	mt := minuteTruth{t: t, start: t0, truth: truth}
	un := u.Narrow()
	for q, ok := un.Next(); ok; q, ok = un.Next() {
		un.Observe(mt.count(q))
		arrive()
	}
	ur := un.Result()
	out := narrowed{fetched: make([]bool, m), requests: ur.Requests, budget: cfg.MaxRequests}
	for _, k := range ur.Keep {
		out.entries = append(out.entries, [3]int64{0, int64(m), k.Entry.Count})
	}
	for _, f := range ur.Refetch {
		n, ok := f.NarrowWindow(ref, cfg, u.Final, cfg.MaxRequests-ur.Requests)
		if !ok {
			for x := range out.fetched {
				out.fetched[x] = true
			}
			out.entries = append(out.entries, [3]int64{0, int64(m), f.Entry.Count})
			continue
		}
		for q, more := n.Next(); more; q, more = n.Next() {
			n.Observe(mt.count(q))
			arrive()
		}
		r := n.Result()
		out.below = true
		out.requests += r.Requests
		for _, p := range r.Parts {
			for x := minuteOf(p.Start); x < minuteOf(p.End); x++ {
				out.fetched[x] = true
			}
		}
		count := sum(ref) // no update: the old count stays
		if len(r.Update.Replaces) > 0 {
			count = r.Update.Entry.Count
		}
		out.entries = append(out.entries, [3]int64{0, int64(m), count})
	}
	return out
}

// Property (C3, late data), issue 31: Narrowing and WindowNarrowing are
// one state machine, driven here on the same data, a run of minutes with
// their stored (delivered) counts, as a unit of one-minute windows and as
// one window of those minutes: random counts, growth, a deletion at
// times, records arriving between the requests at times, the last point
// or not, a request cap at times. Both uses fetch again every minute that
// had grown when the narrowing began or, before the last point only,
// leave it to the next point with a stored count below the truth; no
// stored count exceeds what is delivered once the refetches ran; requests
// stay within the cap and, for a unit without arrivals, within the
// package doc's 1 + g*ceil(log2 n) (twice the levels at the last point).
// Without arrivals, deletions or cap, and with RefetchRows 0, both fetch
// again exactly the minutes that grew.
func TestBothNarrowingsAreOneMachineOnTheSameData(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 5))
	exact, below := 0, 0
	for round := range 1500 {
		m := 2 + rng.IntN(90)
		ref := make([]int64, m)
		for i := range ref {
			ref[i] = []int64{rng.Int64N(20), rng.Int64N(500), rng.Int64N(3000)}[rng.IntN(3)]
		}
		start := slices.Clone(ref)
		g := rng.IntN(min(m, 5) + 1)
		for _, i := range rng.Perm(m)[:g] {
			start[i] += 1 + rng.Int64N(40)
		}
		// A deletion in the range of a late record hides it from any count:
		// such rounds check only that no stored count exceeds the delivered.
		deleted := rng.IntN(5) == 0
		if deleted {
			i := rng.IntN(m)
			start[i] = max(start[i]-1-rng.Int64N(5), 0)
		}
		final := rng.IntN(3) == 0
		arrivals := rng.IntN(2) == 0
		cfg := cfgForTests()
		cfg.MaxSpan = 48 * time.Hour
		cfg.RefetchRows = []int64{0, 100, 2000}[rng.IntN(3)]
		cfg.MaxRequests = 1000
		capped := rng.IntN(4) == 0
		if capped {
			cfg.MaxRequests = 2 + rng.IntN(10)
		}
		levels := int(math.Ceil(math.Log2(float64(m))))
		bound := 1 + g*levels
		if final {
			bound = 1 + 2*g*levels
		}
		var got [2]narrowed
		for use, narrow := range []func(*testing.T, Config, []int64, []int64, bool, func()) narrowed{narrowAsUnit, narrowAsWindow} {
			name := []string{"unit", "window"}[use]
			truth := slices.Clone(start)
			arr := rand.New(rand.NewPCG(uint64(round), 1)) // the same arrivals for both uses
			arrive := func() {
				if arrivals && arr.IntN(2) == 0 {
					truth[arr.IntN(m)] += 1 + arr.Int64N(3)
				}
			}
			r := narrow(t, cfg, ref, truth, final, arrive)
			got[use] = r
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("round %d, as a %s (ref %v, truth when it began %v, at the end %v, refetch rows %d, cap %d, final %v, arrivals %v, deleted %v): %s",
					round, name, ref, start, truth, cfg.RefetchRows, cfg.MaxRequests, final, arrivals, deleted, fmt.Sprintf(format, args...))
			}
			if r.requests > r.budget {
				fail("%d requests, cap %d", r.requests, r.budget)
			}
			if use == 0 && !arrivals && !deleted && r.requests > bound {
				fail("%d requests, the doc's bound %d", r.requests, bound)
			}
			// The refetches deliver what is visible when they run: the end's
			// truth; the delivered set keeps what a deletion took.
			delivered := slices.Clone(ref)
			for x, f := range r.fetched {
				if f {
					delivered[x] = max(ref[x], truth[x])
				}
			}
			covering := make([]int, m)
			for e, en := range r.entries {
				if d := sum(delivered[en[0]:en[1]]); en[2] > d || en[2] < 0 {
					fail("the entry of minutes [%d, %d) stores %d, %d delivered", en[0], en[1], en[2], d)
				}
				for x := en[0]; x < en[1]; x++ {
					covering[x] = e
				}
			}
			for x := range m {
				if deleted || start[x] <= ref[x] || r.fetched[x] {
					continue
				}
				if final {
					fail("minute %d had grown and was not fetched again at the last point", x)
				}
				if en := r.entries[covering[x]]; en[2] >= sum(truth[en[0]:en[1]]) {
					fail("minute %d had grown, was not fetched again, and the entry of [%d, %d) stores %d, the truth: the next point cannot see it",
						x, en[0], en[1], en[2])
				}
			}
		}
		if got[1].below {
			below++
		}
		if arrivals || deleted || capped || cfg.RefetchRows != 0 {
			continue
		}
		exact++
		for x := range m {
			grew := start[x] > ref[x]
			if got[0].fetched[x] != grew || got[1].fetched[x] != grew {
				t.Fatalf("round %d (ref %v, truth %v, final %v): minute %d grew %v; fetched as a unit %v, as a window %v",
					round, ref, start, final, x, grew, got[0].fetched[x], got[1].fetched[x])
			}
		}
	}
	t.Logf("%d rounds narrowed the window below its bounds, %d compared the two uses exactly", below, exact)
	if exact < 50 || below < 500 {
		t.Fatalf("only %d rounds narrowed a window and %d compared the two uses exactly: the test proves little", below, exact)
	}
}
