package apisim

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// faults injects the failures of C1 and C5 into data requests. Each fault
// draws from its own seeded generator, in the order requests arrive: a run
// with the same requests in the same order fails the same way, and a
// retried request draws anew, so no request fails forever.
type faults struct {
	errorRate, slowRate, cutRate float64
	slowDelay                    time.Duration
	revokeEvery                  int

	mu      sync.Mutex
	errRng  *rand.Rand
	slowRng *rand.Rand
	cutRng  *rand.Rand
	counts  map[string]int // data requests per user, for revoke_every
}

func newFaults(cfg *Config) *faults {
	s := uint64(cfg.Seed)
	return &faults{
		errorRate:   cfg.ErrorRate,
		slowRate:    cfg.SlowRate,
		cutRate:     cfg.CutRate,
		slowDelay:   cfg.SlowDelay,
		revokeEvery: cfg.RevokeEvery,
		errRng:      rand.New(rand.NewPCG(s, 0xe1)),
		slowRng:     rand.New(rand.NewPCG(s, 0x51)),
		cutRng:      rand.New(rand.NewPCG(s, 0xc7)),
		counts:      map[string]int{},
	}
}

// serverError returns 500 or 503 for a request chosen to fail, else 0.
func (f *faults) serverError() int {
	if f.errorRate <= 0 {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errRng.Float64() >= f.errorRate {
		return 0
	}
	if f.errRng.IntN(2) == 0 {
		return http.StatusInternalServerError
	}
	return http.StatusServiceUnavailable
}

// revokeNow counts a data request of user and reports whether it is the
// one that revokes all of the user's tokens (C1: a token can die early).
func (f *faults) revokeNow(user string) bool {
	if f.revokeEvery <= 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[user]++
	return f.counts[user]%f.revokeEvery == 0
}

// slow waits slow_delay for a response chosen to be slow, or until ctx ends.
func (f *faults) slow(ctx context.Context) {
	if f.slowRate <= 0 {
		return
	}
	f.mu.Lock()
	hit := f.slowRng.Float64() < f.slowRate
	f.mu.Unlock()
	if !hit {
		return
	}
	t := time.NewTimer(f.slowDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// cutAt returns where to cut a body of n bytes (C5: cut off mid-body), or -1.
func (f *faults) cutAt(n int) int {
	if f.cutRate <= 0 || n < 2 {
		return -1
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cutRng.Float64() >= f.cutRate {
		return -1
	}
	return 1 + f.cutRng.IntN(n-1)
}
