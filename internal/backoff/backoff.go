// Package backoff is the one retry-wait policy of the collector: capped
// exponential growth with jitter. The API client, the pollers, the
// pipeline's sink retries and the sink start-up all use it, so that every
// retry in the process behaves the same way and is tuned in one place.
//
// It imports nothing of the project (bottom floor).
package backoff

import (
	"math/rand/v2"
	"time"
)

// Jitter selects how a wait is randomized.
type Jitter int

const (
	// Full draws the wait uniformly from [0, d]: callers that fail
	// together spread out the most (the API client's retries).
	Full Jitter = iota
	// Equal draws it from [d/2, d]: never near zero, for loops that must
	// not spin (a failed poll, a refused sink write, a sink that is down).
	Equal
)

// Policy is a capped exponential backoff: attempt n (from 0) waits
// Initial*2^n, at most Max, randomized by Jitter. The zero Policy waits
// nothing. A Policy is a value; it is safe for concurrent use.
type Policy struct {
	// Initial is the wait of the first retry.
	Initial time.Duration
	// Max caps every wait (before jitter); Max below Initial means Initial.
	Max time.Duration
	// Jitter is Full (the zero value) or Equal.
	Jitter Jitter
	// Rand draws from [0, n); nil uses math/rand/v2. Tests inject a fixed
	// source.
	Rand func(n int64) int64
}

// Cap returns the wait of attempt n before jitter: Initial doubled n times,
// capped at Max.
func (p Policy) Cap(n int) time.Duration {
	limit := max(p.Max, p.Initial)
	d := p.Initial
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// Wait returns the randomized wait before retry attempt n (from 0).
func (p Policy) Wait(n int) time.Duration {
	d := p.Cap(n)
	if d <= 0 {
		return 0
	}
	rnd := p.Rand
	if rnd == nil {
		rnd = rand.Int64N
	}
	if p.Jitter == Equal {
		return d/2 + time.Duration(rnd(int64(d/2)+1))
	}
	return time.Duration(rnd(int64(d) + 1))
}
