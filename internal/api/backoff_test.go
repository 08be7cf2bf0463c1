package api

import (
	"testing"
	"time"
)

func TestBackoff_FullJitterCappedAtMax(t *testing.T) {
	top := func(n int64) int64 { return n - 1 }
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		if got := backoff(time.Second, 10*time.Second, n, top); got != want {
			t.Errorf("attempt %d: max wait %v, want %v", n, got, want)
		}
	}
	if got := backoff(time.Second, 10*time.Second, 3, func(int64) int64 { return 0 }); got != 0 {
		t.Errorf("full jitter may wait 0, got %v", got)
	}
}
