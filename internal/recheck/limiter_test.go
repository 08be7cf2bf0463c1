package recheck

import (
	"sync"
	"testing"
	"time"
)

// clock is a manual clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// C4: rechecks take at most their share of a functionality's bucket
// (480 per hour) over any period.
func TestC4TheLimiterKeepsRechecksUnderTheirShareOverASlidingPeriod(t *testing.T) {
	clk := &clock{t: t0}
	l := NewLimiter(0.10, 480, time.Hour, clk.now)
	if c := l.Cap(); c != 48 {
		t.Fatalf("Cap() = %d, want 48", c)
	}
	// 30 at once, 18 ten minutes later: the share is spent.
	for i := range 48 {
		if i == 30 {
			clk.advance(10 * time.Minute)
		}
		if !l.Allow() {
			t.Fatalf("request %d refused under the share", i+1)
		}
	}
	if l.Allow() || l.Spent() != 48 {
		t.Fatalf("a request over the share allowed (spent %d)", l.Spent())
	}
	// The first 30 leave the period an hour after they were made.
	if next := l.Next(); !next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Next() = %v, want %v", next, t0.Add(time.Hour))
	}
	clk.advance(50*time.Minute - time.Nanosecond)
	if l.Allow() {
		t.Fatal("allowed before a spend left the period")
	}
	clk.advance(time.Nanosecond)
	for i := range 30 {
		if !l.Allow() {
			t.Fatalf("request %d refused after the first 30 left the period", i+1)
		}
	}
	if l.Allow() {
		t.Fatal("allowed over the share")
	}
	if next := l.Next(); !next.Equal(t0.Add(70 * time.Minute)) {
		t.Fatalf("Next() = %v, want when the 18 of minute 10 leave", next)
	}
}

func TestTheLimiterFollowsItsBucketAndAlwaysAllowsOne(t *testing.T) {
	clk := &clock{t: t0}
	l := NewLimiter(0.10, 5, time.Hour, clk.now)
	if l.Cap() != 1 || !l.Allow() || l.Allow() {
		t.Fatal("a small bucket must still allow one recheck a period")
	}
	l.SetRate(100, time.Minute) // the server says otherwise (C4)
	if l.Cap() != 10 || l.Spent() != 1 {
		t.Fatalf("after SetRate: cap %d spent %d", l.Cap(), l.Spent())
	}
	clk.advance(time.Minute)
	if l.Spent() != 0 {
		t.Fatal("a spend outlived the new period")
	}
	l.SetRate(0, time.Minute)
	if l.Cap() != 0 || l.Allow() || !l.Next().IsZero() {
		t.Fatal("a bucket of no tokens allows rechecks")
	}
}

func TestTheLimiterIsSafeForConcurrentUse(t *testing.T) {
	clk := &clock{t: t0}
	l := NewLimiter(0.5, 400, time.Hour, clk.now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if l.Allow() {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
				_ = l.Spent()
			}
		})
	}
	wg.Wait()
	if allowed != 200 {
		t.Fatalf("%d allowed, want the cap of 200", allowed)
	}
}
