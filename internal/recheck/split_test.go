package recheck

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// grownWindow is a window of len(delivered) minutes from t0 (plus off at
// its start) logged with count stored, and the refetch Unit.Narrow made of
// it when its count is now now.
func grownWindow(off time.Duration, delivered []int64, stored, now int64) Refetch {
	start := t0.Add(off)
	end := t0.Add(time.Duration(len(delivered)) * time.Minute)
	e := cursor.LoggedWindow{Start: start, End: end, Count: now, FetchedAt: end}
	return Refetch{Update: Update{Entry: e, Replaces: []time.Time{start}}, Grew: now - stored, Counted: true}
}

// minuteTruth answers the count of [q.Start, q.End) from per-minute true
// counts; a query must start and end on the window's bounds or minutes.
type minuteTruth struct {
	t     testing.TB
	start time.Time
	truth []int64
}

func (m minuteTruth) count(q Query) int64 {
	m.t.Helper()
	i := int(q.Start.Sub(t0.Truncate(time.Minute)) / time.Minute)
	j := int((q.End.Sub(t0.Truncate(time.Minute)) + time.Minute - 1) / time.Minute)
	if (q.Start.Truncate(time.Minute) != q.Start && !q.Start.Equal(m.start)) || i < 0 || j > len(m.truth) || i >= j {
		m.t.Fatalf("query [%v, %v) is not on the window's minutes", q.Start, q.End)
	}
	var n int64
	for _, x := range m.truth[i:j] {
		n += x
	}
	return n
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// A large window whose late records all fell in its last minutes is
// narrowed to them: a few counts, and a refetch of about a page rather
// than of the whole window.
func TestANarrowedWindowFetchesAgainOnlyTheMinutesThatGrew(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	delivered := make([]int64, 7*24*60) // a 7-day window, 12 rows a minute
	for i := range delivered {
		delivered[i] = 12
	}
	truth := append([]int64(nil), delivered...)
	for i := len(truth) - 4; i < len(truth); i++ {
		truth[i] += 5 // 20 late records in the last four minutes
	}
	f := grownWindow(0, delivered, sum(delivered), sum(truth))
	n, ok := f.NarrowWindow(delivered, cfg, false, cfg.MaxRequests)
	if !ok {
		t.Fatal("a grown 7-day window of 120,960 rows was not narrowed")
	}
	mt := minuteTruth{t: t, start: f.Start(), truth: truth}
	for q, more := n.Next(); more; q, more = n.Next() {
		n.Observe(mt.count(q))
	}
	res := n.Result()
	if len(res.Parts) != 1 || !res.Parts[0].End.Equal(f.End()) || !res.Parts[0].Start.Before(f.End().Add(-4*time.Minute)) {
		t.Fatalf("parts %+v, want one ending with the window and holding its last four minutes", res.Parts)
	}
	if got := res.Refetched(); got > cfg.RefetchRows || got < 20 {
		t.Errorf("refetched %d rows, want at most %d (the whole window holds %d)", got, cfg.RefetchRows, sum(truth))
	}
	if res.Requests > 5 || res.Capped {
		t.Errorf("%d count requests (capped %v), want about log2(120,960/10,000)", res.Requests, res.Capped)
	}
	if res.Update.Entry.Count != sum(truth) || len(res.Update.Replaces) != 1 {
		t.Errorf("update %+v, want the window's entry with count %d", res.Update, sum(truth))
	}
	t.Logf("7-day window, 20 late rows: %d count requests, %d rows fetched again of %d", res.Requests, res.Refetched(), sum(truth))
}

// Narrowing declines what it cannot do better or cannot trust, and the
// window is then fetched whole: a small window, a window of one minute,
// and a window whose delivered set holds fewer records than the log's
// count (fetched before the stream kept delivered sets).
func TestAWindowIsFetchedWholeWhenNarrowingCannotPayOrBeTrusted(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	big := make([]int64, 60)
	for i := range big {
		big[i] = 1000
	}
	if _, ok := grownWindow(0, big, 60_000, 60_010).NarrowWindow(big, cfg, false, 32); !ok {
		t.Fatal("the reference window was not narrowed")
	}
	small := []int64{100, 100}
	if _, ok := grownWindow(0, small, 200, 210).NarrowWindow(small, cfg, false, 32); ok {
		t.Error("a window of 210 rows was narrowed")
	}
	if _, ok := grownWindow(0, []int64{20_000}, 20_000, 20_010).NarrowWindow([]int64{20_000}, cfg, false, 32); ok {
		t.Error("a one-minute window was narrowed")
	}
	empty := make([]int64, 60)
	if _, ok := grownWindow(0, empty, 60_000, 60_010).NarrowWindow(empty, cfg, false, 32); ok {
		t.Error("a window without delivered set was narrowed")
	}
	if _, ok := grownWindow(0, big, 60_000, 60_010).NarrowWindow(big[:59], cfg, false, 32); ok {
		t.Error("counts of the wrong minutes were used")
	}
}

// The invariants, over random windows with late records arriving while
// the narrowing runs (and deletions, which no count can tell from a
// growth in the same range): every minute that held records not yet delivered
// when the recheck began is fetched again or, before the last point, left
// to the next one by a stored count below the truth; the stored count
// never exceeds what is delivered after the parts are fetched; at the
// last point every such minute is fetched; requests stay within the
// budget.
func TestWindowNarrowingNeverHidesARecord(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.RefetchRows = 300
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 99))
		minutes := 2 + r.IntN(200)
		delivered := make([]int64, minutes)
		for i := range delivered {
			delivered[i] = int64(r.IntN(60))
		}
		truth := append([]int64(nil), delivered...)
		for range 1 + r.IntN(6) {
			truth[r.IntN(minutes)] += int64(1 + r.IntN(20))
		}
		// A deletion in the same range as a late record hides it from any
		// count (the log's counts of whole windows alike): runs with one
		// check only that the stored count stays below what is delivered.
		deleted := r.IntN(5) == 0
		if deleted {
			i := r.IntN(minutes)
			truth[i] = max(truth[i]-int64(1+r.IntN(3)), 0)
		}
		off := time.Duration(r.IntN(60)) * time.Second
		delivered[0] = 0 // the window starts off into its first minute: nothing before
		truth[0] = min(truth[0], int64(r.IntN(3)))
		if sum(truth) <= sum(delivered) || sum(truth) <= cfg.RefetchRows {
			continue
		}
		final := r.IntN(3) == 0
		budget := 1 + r.IntN(32)
		f := grownWindow(off, delivered, sum(delivered), sum(truth))
		missing := make([]bool, minutes)
		for i := range truth {
			missing[i] = truth[i] > delivered[i]
		}
		n, ok := f.NarrowWindow(delivered, cfg, final, budget)
		if !ok {
			t.Fatalf("seed %d: not narrowed", seed)
		}
		mt := minuteTruth{t: t, start: f.Start(), truth: truth}
		for q, more := n.Next(); more; q, more = n.Next() {
			n.Observe(mt.count(q))
			if r.IntN(3) == 0 {
				truth[r.IntN(minutes)]++ // arrives between two counts
			}
		}
		res := n.Result()
		if res.Requests > budget {
			t.Errorf("seed %d: %d requests, budget %d", seed, res.Requests, budget)
		}
		// Fetch the parts: what was delivered in them becomes the truth.
		after := append([]int64(nil), delivered...)
		fetched := make([]bool, minutes)
		for _, p := range res.Parts {
			i := int(p.Start.Sub(t0.Truncate(time.Minute)) / time.Minute)
			j := int((p.End.Sub(t0.Truncate(time.Minute)) + time.Minute - 1) / time.Minute)
			for x := i; x < j; x++ {
				fetched[x] = true
				after[x] = max(after[x], truth[x])
			}
		}
		stored := res.Update.Entry.Count
		if len(res.Update.Replaces) == 0 {
			stored = f.Entry.Count - f.Grew // no update: the old count stays
		}
		if stored > sum(after) {
			t.Fatalf("seed %d: stored count %d exceeds what is delivered, %d", seed, stored, sum(after))
		}
		for i, m := range missing {
			if !m || fetched[i] || deleted {
				continue
			}
			if final {
				t.Fatalf("seed %d: minute %d held records not delivered and was not fetched at the last point (parts %+v)", seed, i, res.Parts)
			}
			if stored >= sum(truth) {
				t.Fatalf("seed %d: minute %d held records not delivered, and the stored count %d hides them (truth %d)", seed, i, stored, sum(truth))
			}
		}
	}
}
