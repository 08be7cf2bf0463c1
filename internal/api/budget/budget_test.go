package budget

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// C4: the local bucket holds limit*(1-reserve) tokens and refills at
// limit/period*(1-reserve).
func TestBudget_C4_RefillsAtTheConfiguredRateLessTheReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(nil, nil)
		bk := b.Bucket("u", "dns", Rate{Limit: 60, Period: 5 * time.Second, Reserve: 0.1})
		if got := bk.Tokens(); got != 54 {
			t.Fatalf("initial tokens = %v, want 54", got)
		}
		ctx := context.Background()
		start := time.Now()
		for range 54 + 27 {
			if err := bk.Acquire(ctx, Priority{Account: "a"}); err != nil {
				t.Fatal(err)
			}
			bk.Done(Headers{}, 200)
		}
		// 27 tokens beyond the capacity need 27 / (54/5s) = 2.5 s.
		if el := time.Since(start); el < 2400*time.Millisecond || el > 2600*time.Millisecond {
			t.Fatalf("81 tokens took %v, want 2.5s", el)
		}
	})
}

// C4: RateLimit-Remaining lowers the local count: others spend the same
// bucket, and our requests in flight are counted too.
func TestBudget_C4_HeaderResyncLowersTheLocalCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(nil, nil)
		bk := b.Bucket("u", "dns", Rate{Limit: 100, Period: 100 * time.Second, Reserve: 0.1})
		ctx := context.Background()
		for range 3 {
			if err := bk.Acquire(ctx, Priority{}); err != nil {
				t.Fatal(err)
			}
		}
		// 87 left locally; the server says 40 remain after one request
		// while two more of ours are in flight: 40 - 10 - 2 = 28.
		bk.Done(Headers{Remaining: 40, HasRemaining: true}, 200)
		if got := bk.Tokens(); got != 28 {
			t.Fatalf("tokens after resync = %v, want 28", got)
		}
		// A higher Remaining while requests are in flight is not trusted.
		bk.Done(Headers{Remaining: 80, HasRemaining: true}, 200)
		if got := bk.Tokens(); got != 28 {
			t.Fatalf("tokens = %v, want 28 (stale answer ignored upward)", got)
		}
		// With nothing in flight the answer is current: 70 - 10 = 60.
		bk.Done(Headers{Remaining: 70, HasRemaining: true}, 200)
		if got := bk.Tokens(); got != 60 {
			t.Fatalf("tokens = %v, want 60", got)
		}
	})
}

// C4: Remaining 0 with Reset > 0 means no token before now + Reset, and a
// 429 does the same.
func TestBudget_C4_ResetIsHonoured(t *testing.T) {
	for _, status := range []int{200, 429} {
		synctest.Test(t, func(t *testing.T) {
			b := New(nil, nil)
			bk := b.Bucket("u", "dns", Rate{Limit: 1000, Period: 10 * time.Second, Reserve: 0})
			ctx := context.Background()
			if err := bk.Acquire(ctx, Priority{}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			bk.Done(Headers{Remaining: 0, HasRemaining: true, Reset: 3 * time.Second, HasReset: true}, status)
			if err := bk.Acquire(ctx, Priority{}); err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el != 3*time.Second {
				t.Fatalf("status %d: next token after %v, want 3s", status, el)
			}
		})
	}
}

// C4: a token comes back within one period, so a Reset beyond the period
// (9999999 s: 2,777 hours) counts as one period, for a 429 and for
// Remaining 0 alike.
func TestBudget_C4_ResetBeyondThePeriodIsClampedToThePeriod(t *testing.T) {
	for _, status := range []int{200, 429} {
		synctest.Test(t, func(t *testing.T) {
			b := New(nil, nil)
			bk := b.Bucket("u", "dns", Rate{Limit: 1000, Period: 2 * time.Second, Reserve: 0})
			ctx := context.Background()
			if err := bk.Acquire(ctx, Priority{}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			bk.Done(Headers{Remaining: 0, HasRemaining: true, Reset: 9999999 * time.Second, HasReset: true}, status)
			if nb := bk.NotBefore().Sub(start); nb != 2*time.Second {
				t.Fatalf("status %d: not before now + %v, want the period (2s)", status, nb)
			}
			if err := bk.Acquire(ctx, Priority{}); err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el != 2*time.Second {
				t.Fatalf("status %d: next token after %v, want 2s", status, el)
			}
		})
	}
}

func TestBudget_AcquireEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(nil, nil)
		bk := b.Bucket("u", "dns", Rate{Limit: 1, Period: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := bk.Acquire(ctx, Priority{}); err != nil {
			t.Fatal(err)
		}
		if err := bk.Acquire(ctx, Priority{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
	})
}

// grants drains an empty bucket with the given waiters queued, one token at
// a time, and returns the order in which they were served.
func grants(t *testing.T, ps []Priority) []int {
	t.Helper()
	var order []int
	synctest.Test(t, func(t *testing.T) {
		b := New(nil, nil)
		bk := b.Bucket("u", "dns", Rate{Limit: 1, Period: time.Second})
		ctx := context.Background()
		if err := bk.Acquire(ctx, Priority{}); err != nil { // empty it
			t.Fatal(err)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, p := range ps {
			wg.Go(func() {
				if err := bk.Acquire(ctx, p); err != nil {
					t.Error(err)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
			synctest.Wait() // queue in index order
		}
		wg.Wait()
	})
	return order
}

// DESIGN item 3: when tokens are scarce, the newest windows go first.
func TestBudget_C4_FreshWindowsGoBeforeBackfill(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	order := grants(t, []Priority{
		{Account: "a", WindowEnd: t0},
		{Account: "a", WindowEnd: t0.Add(time.Hour)},
		{Account: "a", WindowEnd: t0.Add(48 * time.Hour), Fresh: true},
	})
	want := []int{2, 1, 0}
	if !slices.Equal(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
}

// Rechecks (C3: late records) go after fresh windows and before
// backfill, whatever the accounts served so far: a backfill of another
// account must not starve them until their windows leave the log.
func TestBudget_C4_RechecksGoAfterFreshBeforeBackfill(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	order := grants(t, []Priority{
		{Account: "b", WindowEnd: t0},
		{Account: "a", WindowEnd: t0.Add(47 * time.Hour), Recheck: true},
		{Account: "b", WindowEnd: t0.Add(time.Hour)},
		{Account: "a", WindowEnd: t0.Add(48 * time.Hour), Fresh: true},
	})
	want := []int{3, 1, 2, 0}
	if !slices.Equal(order, want) {
		t.Fatalf("order = %v, want %v", order, want)
	}
}

// DESIGN item 3: accounts take turns among equal priority.
func TestBudget_C4_AccountsTakeTurns(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var ps []Priority
	for range 3 {
		ps = append(ps, Priority{Account: "a", WindowEnd: t0})
	}
	for range 3 {
		ps = append(ps, Priority{Account: "b", WindowEnd: t0})
	}
	order := grants(t, ps)
	acct := make([]string, len(order))
	for i, o := range order {
		acct[i] = ps[o].Account
	}
	for i := 1; i < len(acct); i++ {
		if acct[i] == acct[i-1] {
			t.Fatalf("accounts served %v, want them alternating", acct)
		}
	}
}

func TestBudget_ServerLimitHeaderWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(nil, nil)
		bk := b.Bucket("u", "dns", Rate{Limit: 100, Period: 100 * time.Second})
		if err := bk.Acquire(context.Background(), Priority{}); err != nil {
			t.Fatal(err)
		}
		bk.Done(Headers{Limit: 50, HasLimit: true}, 200)
		if got := bk.Tokens(); math.Abs(got-49.5) > 1e-9 {
			t.Fatalf("tokens = %v, want 49.5", got)
		}
	})
}

// The budget's own Acquire, Done and Period reach the bucket of (user,
// functionality), made with the rate of its first Acquire: users and
// functionalities never share a bucket.
func TestBudget_C4_CallsByUserAndFunctionalityShareOneBucketEach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(nil, nil)
		ctx := context.Background()
		rate := Rate{Limit: 10, Period: 10 * time.Second}
		if err := b.Acquire(ctx, "u", "dns", rate, Priority{}); err != nil {
			t.Fatal(err)
		}
		b.Done("u", "dns", Headers{Remaining: 0, HasRemaining: true}, 200)
		if got := b.Bucket("u", "dns", Rate{Limit: 99, Period: time.Hour}).Tokens(); got != 0 {
			t.Fatalf("dns of u holds %v tokens after RateLimit-Remaining 0, want 0", got)
		}
		if p := b.Period("u", "dns"); p != 10*time.Second {
			t.Fatalf("period %v, want the first Acquire's 10s", p)
		}
		for _, other := range [][2]string{{"u", "connections"}, {"v", "dns"}} {
			if got := b.Bucket(other[0], other[1], rate).Tokens(); got != 10 {
				t.Fatalf("%s/%s holds %v tokens, want a full bucket of its own", other[0], other[1], got)
			}
		}
	})
}

// C4: the pace each stream of a bucket may keep is the period over its
// part of what is left after the reserve and what is set aside; the
// worked example of docs/latedata.md.
func TestRate_C4_PaceSharesWhatIsLeftAfterTheReserve(t *testing.T) {
	t.Parallel()
	r := DefaultRate()
	for _, c := range []struct {
		aside   float64
		members int
		want    time.Duration
	}{
		{0.1, 3, 28125 * time.Millisecond}, // 3600 s / (384/3)
		{0, 3, 25 * time.Second},           // 3600 s / (432/3)
		{0.1, 1, 9375 * time.Millisecond},  // 3600 s / 384
		{0.95, 2, 2 * time.Hour},           // nothing left: one token shared
		{0.1, 0, 0},
	} {
		if got := r.Pace(c.aside, c.members); got != c.want {
			t.Errorf("Pace(%v, %d) = %v, want %v", c.aside, c.members, got, c.want)
		}
	}
}

// C4: the bucket's rate follows the server's RateLimit-Limit.
func TestBucket_C4_RateFollowsTheServersLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(nil, nil)
		if got := b.Rate("u", "dns", DefaultRate()); got != DefaultRate() {
			t.Fatalf("rate before any answer = %+v, want the configured %+v", got, DefaultRate())
		}
		bk := b.Bucket("u", "dns", Rate{Limit: 1, Period: time.Second})
		if err := bk.Acquire(context.Background(), Priority{}); err != nil {
			t.Fatal(err)
		}
		bk.Done(Headers{Limit: 240, HasLimit: true}, 200)
		want := DefaultRate()
		want.Limit = 240
		if got := b.Rate("u", "dns", DefaultRate()); got != want {
			t.Fatalf("rate after RateLimit-Limit 240 = %+v, want %+v", got, want)
		}
	})
}
