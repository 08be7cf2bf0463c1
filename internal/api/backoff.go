package api

import (
	"math/rand/v2"
	"time"
)

// backoff returns the wait before retry attempt n (from 0): exponential from
// initial, capped at max, with full jitter (a uniform draw in [0, cap]), so
// that many clients failing together do not retry together.
func backoff(initial, max time.Duration, n int, rnd func(int64) int64) time.Duration {
	d := initial
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	if d <= 0 {
		return 0
	}
	return time.Duration(rnd(int64(d) + 1))
}

// jitterRand is the default random source of backoff and jitter.
func jitterRand(n int64) int64 { return rand.Int64N(n) }
