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

// leaves is a run of one-minute windows from t0 with the stored counts.
func leaves(counts ...int64) []cursor.LoggedWindow {
	out := make([]cursor.LoggedWindow, len(counts))
	for i, n := range counts {
		out[i] = win(i, i+1, n)
	}
	return out
}

// unitOf is the one unit of log at its first recheck point (final: at its
// last), with cfg.
func unitOf(t testing.TB, cfg Config, log []cursor.LoggedWindow, final bool) Unit {
	t.Helper()
	end := log[len(log)-1].End
	now := end.Add(2 * time.Hour)
	if final {
		for i := range log {
			log[i].Passed = cfg.Last() - time.Minute // every point passed but the last
		}
		now = end.Add(cfg.Offsets[len(cfg.Offsets)-1] + time.Minute)
	}
	us := cfg.Plan().Due(log, now)
	if len(us) != 1 || len(us[0].Windows) != len(log) {
		t.Fatalf("the log makes %d units, want one of %d windows", len(us), len(log))
	}
	if us[0].Final != final {
		t.Fatalf("unit final %v, want %v", us[0].Final, final)
	}
	return us[0]
}

// truthCounter answers counts from per-window true counts; a query must
// cover whole windows of the unit.
type truthCounter struct {
	t     testing.TB
	u     Unit
	truth []int64
}

func (c truthCounter) count(q Query) int64 {
	c.t.Helper()
	i, j := c.u.Index(q.Start), c.u.Index(q.End.Add(-time.Nanosecond))
	if i < 0 || j < 0 || !c.u.Windows[i].Start.Equal(q.Start) || !c.u.Windows[j].End.Equal(q.End) {
		c.t.Fatalf("query [%v, %v) does not cover whole windows", q.Start, q.End)
	}
	var n int64
	for _, x := range c.truth[i : j+1] {
		n += x
	}
	return n
}

// run drives a narrowing to its end; between requests, arrive may change
// the truth (late records arriving while it runs).
func run(t testing.TB, u Unit, truth []int64, arrive func()) Result {
	t.Helper()
	n := u.Narrow()
	tc := truthCounter{t: t, u: u, truth: truth}
	for q, ok := n.Next(); ok; q, ok = n.Next() {
		n.Observe(tc.count(q))
		if arrive != nil {
			arrive()
		}
	}
	return n.Result()
}

func cfgForTests() Config {
	c := fixedConfig()
	c.RefetchRows = 100
	c.Horizon = 48 * time.Hour
	return c
}

func ranges(rs []Refetch) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("[%d,%d)=%d", int(r.Start().Sub(t0)/time.Minute), int(r.End().Sub(t0)/time.Minute), r.Entry.Count))
	}
	return out
}

func TestNarrowing(t *testing.T) {
	big := func(n int) []int64 { // n windows of 1,000 stored rows
		out := make([]int64, n)
		for i := range out {
			out[i] = 1000
		}
		return out
	}
	with := func(s []int64, at int, d int64) []int64 { s = slices.Clone(s); s[at] += d; return s }
	cases := []struct {
		name         string
		stored       []int64
		truth        []int64
		final        bool
		maxRequests  int
		wantRequests int
		wantRefetch  []string
		wantShrunk   int
		wantCapped   bool
	}{
		{name: "an unchanged unit costs one request and keeps every window",
			stored: big(8), truth: big(8), wantRequests: 1},
		{name: "one grown window of eight is found with one count per level (C3 totalRows)",
			stored: big(8), truth: with(big(8), 5, 3), wantRequests: 1 + 3, wantRefetch: []string{"[5,6)=1003"}},
		{name: "two grown windows are found on their two paths",
			stored: big(8), truth: with(with(big(8), 0, 1), 7, 2), wantRequests: 1 + 1 + 2 + 2, wantRefetch: []string{"[0,1)=1001", "[7,8)=1002"}},
		{name: "a small changed range is fetched whole: a page costs what a count does",
			stored: []int64{10, 10, 10, 10}, truth: []int64{10, 12, 10, 10}, wantRequests: 1, wantRefetch: []string{"[0,4)=42"}},
		{name: "narrowing stops at the first range small enough to fetch",
			stored: []int64{1000, 30, 30, 1000}, truth: []int64{1000, 30, 31, 1000}, wantRequests: 1 + 1 + 1, wantRefetch: []string{"[2,3)=31"}},
		{name: "a window that shrank is logged with its new count and not fetched",
			stored: big(4), truth: with(big(4), 2, -10), wantRequests: 1 + 2, wantShrunk: 1},
		{name: "at the last point both halves are counted: no derived count can hide a growth",
			stored: big(8), truth: with(big(8), 5, 3), final: true, wantRequests: 1 + 2*3, wantRefetch: []string{"[5,6)=1003"}},
		{name: "past the request cap the changed range is fetched whole",
			stored: big(8), truth: with(big(8), 5, 3), maxRequests: 2, wantRequests: 2, wantRefetch: []string{"[4,8)=4003"}, wantCapped: true},
		{name: "a cap of one request fetches the whole changed unit",
			stored: big(8), truth: with(big(8), 5, 3), maxRequests: 1, wantRequests: 1, wantRefetch: []string{"[0,8)=8003"}, wantCapped: true},
		{name: "a unit of one window costs one request",
			stored: big(1), truth: with(big(1), 0, 7), wantRequests: 1, wantRefetch: []string{"[0,1)=1007"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgForTests()
			if tc.maxRequests > 0 {
				cfg.MaxRequests = tc.maxRequests
			}
			u := unitOf(t, cfg, leaves(tc.stored...), tc.final)
			r := run(t, u, slices.Clone(tc.truth), nil)
			if r.Requests != tc.wantRequests {
				t.Errorf("%d requests, want %d", r.Requests, tc.wantRequests)
			}
			if got := ranges(r.Refetch); !slices.Equal(got, tc.wantRefetch) {
				t.Errorf("refetch %v, want %v", got, tc.wantRefetch)
			}
			if len(r.Shrunk) != tc.wantShrunk || r.Capped != tc.wantCapped {
				t.Errorf("shrunk %v capped %v", r.Shrunk, r.Capped)
			}
			checkCover(t, u, r)
			for _, k := range r.Keep {
				if k.Entry.Passed != u.At.Sub(k.Entry.End) {
					t.Errorf("kept %v passed %v, want asked at the unit's %v", k.Entry.Start, k.Entry.Passed, u.At)
				}
			}
		})
	}
}

// checkCover fails unless Keep and Refetch replace every window of u
// exactly once, with entries that tile the unit.
func checkCover(t testing.TB, u Unit, r Result) {
	t.Helper()
	seen := map[time.Time]int{}
	var entries []cursor.LoggedWindow
	for _, k := range r.Keep {
		entries = append(entries, k.Entry)
		for _, s := range k.Replaces {
			seen[s]++
		}
	}
	for _, f := range r.Refetch {
		entries = append(entries, f.Entry)
		for _, s := range f.Replaces {
			seen[s]++
		}
	}
	for _, w := range u.Windows {
		if seen[w.Start] != 1 {
			t.Fatalf("window %v replaced %d times", w.Start, seen[w.Start])
		}
	}
	if len(seen) != len(u.Windows) {
		t.Fatalf("%d starts replaced, the unit has %d windows", len(seen), len(u.Windows))
	}
	slices.SortFunc(entries, byStart)
	for i, e := range entries {
		if e.Count < 0 || (i > 0 && !entries[i-1].End.Equal(e.Start)) {
			t.Fatalf("entries do not tile the unit: %v", entries)
		}
	}
	if !entries[0].Start.Equal(u.Start()) || !entries[len(entries)-1].End.Equal(u.End()) {
		t.Fatalf("entries [%v, %v) for a unit [%v, %v)", entries[0].Start, entries[len(entries)-1].End, u.Start(), u.End())
	}
}

// Property (C3, late data): whatever windows of a run grew, and by how
// much, the narrowing fetches every grown window again, fetches no range
// in which nothing changed, stores the true counts, and stays within
// 1 + g*ceil(log2 n) requests (twice the levels at the last point) and
// within the cap.
func TestNarrowingFindsEveryGrownWindowWithinTheBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 3000 {
		n := 1 + rng.IntN(64)
		stored := make([]int64, n)
		for i := range stored {
			switch rng.IntN(3) {
			case 0:
				stored[i] = rng.Int64N(20)
			case 1:
				stored[i] = rng.Int64N(500)
			default:
				stored[i] = rng.Int64N(20_000)
			}
		}
		truth := slices.Clone(stored)
		g := rng.IntN(min(n, 6) + 1)
		for _, i := range rng.Perm(n)[:g] {
			truth[i] += 1 + rng.Int64N(50)
		}
		cfg := cfgForTests()
		cfg.RefetchRows = []int64{0, 100, 5000}[rng.IntN(3)]
		capped := rng.IntN(4) == 0
		if capped {
			cfg.MaxRequests = 1 + rng.IntN(8)
		}
		final := rng.IntN(3) == 0
		u := unitOf(t, cfg, leaves(stored...), final)
		r := run(t, u, truth, nil)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("round %d (stored %v, truth %v, refetch rows %d, cap %d, final %v): %s", round, stored, truth,
				cfg.RefetchRows, cfg.MaxRequests, final, fmt.Sprintf(format, args...))
		}
		checkCover(t, u, r)
		levels := int(math.Ceil(math.Log2(float64(n))))
		bound := 1 + g*levels
		if final {
			bound = 1 + 2*g*levels
		}
		if r.Requests > bound || r.Requests > cfg.MaxRequests {
			fail("%d requests, bound %d, cap %d", r.Requests, bound, cfg.MaxRequests)
		}
		covered := make([]bool, n)
		for _, f := range r.Refetch {
			i, j := u.Index(f.Start()), u.Index(f.End().Add(-time.Nanosecond))
			changed := false
			var want int64
			for x := i; x <= j; x++ {
				covered[x] = true
				changed = changed || truth[x] != stored[x]
				want += truth[x]
			}
			if !changed {
				fail("refetch of the unchanged range %v", ranges([]Refetch{f}))
			}
			if f.Entry.Count != want {
				fail("refetched range %v stores %d, truth %d", ranges([]Refetch{f}), f.Entry.Count, want)
			}
		}
		var recovered int64
		for i := range n {
			if truth[i] > stored[i] && !covered[i] {
				fail("grown window %d is not fetched again (refetch %v)", i, ranges(r.Refetch))
			}
			recovered += truth[i] - stored[i]
		}
		if r.Recovered != recovered {
			fail("recovered %d, the counts grew by %d", r.Recovered, recovered)
		}
		if len(r.Shrunk) != 0 {
			fail("shrinks without deletions: %v", r.Shrunk)
		}
	}
}

// Property: while records keep arriving during a narrowing (its counts are
// asked at different times), no stored count exceeds what was delivered
// for its range, so every record still missing shows as growth at the
// next point; and every window that had grown before the narrowing began
// and is not fetched again keeps its old count.
func TestANarrowingRacedByArrivalsNeverStoresMoreThanWasDelivered(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	for round := range 2000 {
		n := 2 + rng.IntN(40)
		stored := make([]int64, n)
		for i := range stored {
			stored[i] = rng.Int64N(3000)
		}
		delivered := slices.Clone(stored)
		truth := slices.Clone(stored)
		for range rng.IntN(5) {
			truth[rng.IntN(n)] += 1 + rng.Int64N(5)
		}
		cfg := cfgForTests()
		u := unitOf(t, cfg, leaves(stored...), false)
		r := run(t, u, truth, func() {
			if rng.IntN(2) == 0 {
				truth[rng.IntN(n)] += 1 + rng.Int64N(3)
			}
		})
		checkCover(t, u, r)
		// The refetches deliver what is visible when they run: now.
		for _, f := range r.Refetch {
			for x := u.Index(f.Start()); x <= u.Index(f.End().Add(-time.Nanosecond)); x++ {
				delivered[x] = truth[x]
			}
		}
		check := func(e cursor.LoggedWindow) {
			var d int64
			for x := u.Index(e.Start); x <= u.Index(e.End.Add(-time.Nanosecond)); x++ {
				d += delivered[x]
			}
			if e.Count > d {
				t.Fatalf("round %d: entry [%v, %v) stores %d, %d delivered (stored %v, truth %v, refetch %v)",
					round, e.Start, e.End, e.Count, d, stored, truth, ranges(r.Refetch))
			}
		}
		for _, k := range r.Keep {
			check(k.Entry)
		}
		for _, f := range r.Refetch {
			check(f.Entry)
		}
	}
}

func TestObserveSaysWhenTheRangeJustCountedIsTheRefetch(t *testing.T) {
	u := unitOf(t, cfgForTests(), leaves(10, 10), false)
	n := u.Narrow()
	if _, ok := n.Next(); !ok {
		t.Fatal("no first query")
	}
	if !n.Observe(25) {
		t.Fatal("a small grown unit is its own refetch")
	}
	if _, ok := n.Next(); ok || !n.Done() {
		t.Fatal("queries after the unit was settled")
	}
	if n.Observe(3) {
		t.Fatal("Observe without a query did something")
	}
	r := n.Result()
	if len(r.Refetch) != 1 || !r.Refetch[0].Counted || r.Requests != 1 {
		t.Fatalf("result %+v", r)
	}
	if got := r.Refetch[0].Replaces; len(got) != 2 {
		t.Fatalf("the merged refetch replaces %v", got)
	}
}

// Why the last point counts both halves: a record arriving in the left
// half between the parent's count and the left's makes the derived right
// count look unchanged. Before the last point that only defers the find
// (the right keeps its old count, so the next point sees the growth); at
// the last point there is no next one, and the right half is counted.
func TestAtTheLastPointAnArrivalDuringTheNarrowingCannotHideAGrowth(t *testing.T) {
	for _, final := range []bool{false, true} {
		t.Run(fmt.Sprintf("final=%v", final), func(t *testing.T) {
			truth := []int64{1000, 1001} // the right half grew before the recheck
			u := unitOf(t, cfgForTests(), leaves(1000, 1000), final)
			asked := 0
			r := run(t, u, truth, func() {
				if asked++; asked == 1 {
					truth[0]++ // arrives in the left half after the parent's count
				}
			})
			found := slices.ContainsFunc(r.Refetch, func(f Refetch) bool { return f.Start().Equal(u.Windows[1].Start) })
			if final && !found {
				t.Fatalf("the last point missed the grown right half: %v", ranges(r.Refetch))
			}
			if !final {
				if found {
					t.Fatalf("the derived count found it after all: the race is not reproduced (%v)", ranges(r.Refetch))
				}
				for _, k := range r.Keep {
					if k.Entry.Start.Equal(u.Windows[1].Start) && k.Entry.Count != 1000 {
						t.Fatalf("the right half stores %d: the next point would not see its growth", k.Entry.Count)
					}
				}
			}
		})
	}
}

// fixedConfig is the defaults with the fixed points of earlier versions
// (1h, 6h, 24h) rather than learnt ones.
func fixedConfig() Config {
	c := DefaultConfig()
	c.Auto, c.Offsets = false, DefaultOffsets()
	return c
}
