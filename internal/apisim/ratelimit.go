package apisim

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Functionalities that are not a source name (C4).
const (
	fnToken  = "token"
	fnEdge   = "edge"
	edgeUser = "edge"
)

// limiter holds one token bucket per (user, functionality) (C4): limit
// tokens, refilled continuously at limit per period, one token a request.
// Sub-accounts do not appear in the key: they share their user's buckets.
type limiter struct {
	limit  float64
	perSec float64 // refill rate

	mu      sync.Mutex
	buckets map[bucketKey]*bucket
}

type bucketKey struct{ user, fn string }

type bucket struct {
	level float64
	last  time.Time
}

// quota is what the RateLimit-* headers report after a request.
type quota struct {
	limit, remaining, reset int
	ok                      bool
}

func newLimiter(limit int, period time.Duration) *limiter {
	l := &limiter{buckets: map[bucketKey]*bucket{}}
	if limit > 0 {
		l.limit = float64(limit)
		l.perSec = float64(limit) / period.Seconds()
	}
	return l
}

func (l *limiter) enabled() bool { return l.limit > 0 }

// get returns the bucket refilled up to now; l.mu must be held.
func (l *limiter) get(user, fn string, now time.Time) *bucket {
	k := bucketKey{user, fn}
	b := l.buckets[k]
	if b == nil {
		b = &bucket{level: l.limit, last: now}
		l.buckets[k] = b
		return b
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.level = math.Min(l.limit, b.level+dt*l.perSec)
		b.last = now
	}
	return b
}

// take spends one token of (user, fn) if there is one.
func (l *limiter) take(user, fn string, now time.Time) quota {
	if !l.enabled() {
		return quota{ok: true}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.get(user, fn, now)
	// The epsilon absorbs float error of a refill computed from nanoseconds.
	ok := b.level >= 1-1e-6
	if ok {
		b.level = max(b.level-1, 0)
	}
	return l.quotaOf(b, ok)
}

// peek reports the bucket without spending (for responses, such as a 401,
// that take no token).
func (l *limiter) peek(user, fn string, now time.Time) quota {
	if !l.enabled() {
		return quota{ok: true}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.quotaOf(l.get(user, fn, now), true)
}

func (l *limiter) quotaOf(b *bucket, ok bool) quota {
	q := quota{limit: int(l.limit), remaining: int(b.level + 1e-6), ok: ok}
	if q.remaining == 0 {
		// Whole seconds until the next token, rounded up (C4).
		q.reset = int(math.Ceil((1 - b.level) / l.perSec))
		if q.reset < 1 {
			q.reset = 1
		}
	}
	return q
}

// spend takes up to n tokens (never below zero) and returns how many it got.
func (l *limiter) spend(user, fn string, n int, now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.get(user, fn, now)
	got := min(n, int(b.level))
	b.level -= float64(got)
	return got
}

func (q quota) setHeaders(h http.Header) {
	if q.limit == 0 {
		return
	}
	h.Set("RateLimit-Limit", strconv.Itoa(q.limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(q.remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(q.reset))
}

// noisyNeighbour is another client of every user (C4: other clients spend
// the same buckets): it spends frac of each data bucket's refill rate,
// continuously, until ctx ends. Time is measured on now, so a test clock
// drives it; the ticker only decides how often it looks.
func (l *limiter) noisyNeighbour(ctx context.Context, frac float64, keys []bucketKey, now func() time.Time, st *statsTable) {
	rate := frac * l.perSec
	interval := time.Duration(float64(time.Second) / rate)
	interval = min(max(interval, 10*time.Millisecond), time.Second)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last := now()
	debt := 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t := now()
		if dt := t.Sub(last).Seconds(); dt > 0 {
			debt += dt * rate
			last = t
		}
		n := int(debt)
		if n == 0 {
			continue
		}
		debt -= float64(n)
		for _, k := range keys {
			got := l.spend(k.user, k.fn, n, t)
			st.add(k.user, k.fn, func(c *Counter) { c.NoisyTokens += int64(got) })
		}
	}
}
