package backoff

import (
	"testing"
	"time"
)

func TestWaitsDoubleUpToTheCapWithinTheirJitter(t *testing.T) {
	for _, j := range []Jitter{Full, Equal} {
		p := Policy{Initial: 100 * time.Millisecond, Max: time.Second, Jitter: j}
		wantCap := []time.Duration{100, 200, 400, 800, 1000, 1000}
		for n, c := range wantCap {
			c *= time.Millisecond
			if got := p.Cap(n); got != c {
				t.Fatalf("jitter %d attempt %d: cap %s, want %s", j, n, got, c)
			}
			lo := time.Duration(0)
			if j == Equal {
				lo = c / 2
			}
			for range 200 {
				if w := p.Wait(n); w < lo || w > c {
					t.Fatalf("jitter %d attempt %d: wait %s outside [%s, %s]", j, n, w, lo, c)
				}
			}
		}
	}
}

func TestTheZeroPolicyWaitsNothingAndAHugeAttemptDoesNotOverflow(t *testing.T) {
	if w := (Policy{}).Wait(5); w != 0 {
		t.Fatalf("zero policy waits %s", w)
	}
	p := Policy{Initial: time.Second, Max: time.Minute}
	if c := p.Cap(1 << 20); c != time.Minute {
		t.Fatalf("attempt 2^20 caps at %s, want 1m", c)
	}
}

func TestAnInjectedRandomSourceMakesWaitsRepeatable(t *testing.T) {
	p := Policy{Initial: time.Second, Max: time.Second, Jitter: Equal, Rand: func(n int64) int64 { return n - 1 }}
	if w := p.Wait(0); w != time.Second {
		t.Fatalf("wait %s, want 1s with the top draw", w)
	}
}
