package recheck

import (
	"math"
	"sync"
	"time"
)

// Limiter keeps the requests of rechecks under a share of one
// functionality's budget (C4: Limit tokens per Period per user and
// functionality) over a sliding period: at most Cap requests in any
// Period. It does not take the budget's tokens (the API client does, with
// a priority below fresh windows); it only says whether rechecks may ask
// for one more. Ask it before every request a recheck makes: counts, edge
// re-asks and the pages of refetches. Share one Limiter among the streams
// of one (user, functionality).
//
// A Limiter is safe for concurrent use. Create it with NewLimiter.
type Limiter struct {
	now   func() time.Time
	share float64

	mu       sync.Mutex
	limit    int
	period   time.Duration
	spent    []time.Time // spend times within the period, oldest first
	members  int         // streams that share it (Share)
	requests int         // requests a poll of every one of them makes (Share)
}

// Share says who shares l's bucket now: streams streams, a poll of every
// one of which makes requests requests in all, whose rechecks keep share
// (in [0, 1]) of its limit. The streams share its cap (Cadence); the rest
// of the bucket is the polls' (each stream's poll cadence, package
// source, reckons with Requests and Aside). It is the one count of the
// streams that share a bucket: the set of pollers says it whole each time
// it changes (a start, a configuration reload), so that streams a reload
// adds count with those running and streams it drops no longer count;
// the spends already made keep counting (Allow).
func (l *Limiter) Share(streams, requests int, share float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.members, l.requests, l.share = max(streams, 0), max(requests, 0), share
}

// Members is how many streams share l's bucket (Share).
func (l *Limiter) Members() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.members
}

// Requests is how many requests a poll of every stream that shares l's
// bucket makes in all (Share): the streams' polls share the bucket by it.
func (l *Limiter) Requests() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests
}

// Aside is the fraction of the bucket's limit that l keeps for rechecks:
// its share while it has a cap (Cap), else 0. The streams' polls share
// what the reserve and this leave.
func (l *Limiter) Aside() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.capLocked() == 0 {
		return 0
	}
	return l.share
}

// Cadence is how often each stream sharing l can afford a sweep of its
// recent windows (Config.Learnt): the period over the stream's part of
// the cap, of which sweeps plan to spend three quarters; never less than
// interval (a stream asks at most once a step). Zero cap: never (a day).
func (l *Limiter) Cadence(interval time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.capLocked()
	if c == 0 {
		return 24 * time.Hour
	}
	per := float64(c) * autoDenseShare / float64(max(l.members, 1))
	return max(interval, time.Duration(float64(l.period)/per))
}

// NewLimiter returns a limiter of share (in (0, 1]) of a bucket of limit
// tokens per period, on the clock now (nil: time.Now), that no stream
// shares yet (Share).
func NewLimiter(share float64, limit int, period time.Duration, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	l := &Limiter{now: now, share: share}
	l.SetRate(limit, period)
	return l
}

// SetRate changes the bucket's limit and period (the configuration, or
// RateLimit-Limit when the server says otherwise, C4); spends already made
// keep counting.
func (l *Limiter) SetRate(limit int, period time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit, l.period = max(limit, 0), max(period, 0)
}

// Cap is the most requests rechecks may make in any period: the share of
// the limit, rounded down, but at least 1 while the share and the limit
// are positive (a small bucket still rechecks, slowly).
func (l *Limiter) Cap() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.capLocked()
}

func (l *Limiter) capLocked() int {
	if l.share <= 0 || l.limit <= 0 || l.period <= 0 || math.IsNaN(l.share) {
		return 0
	}
	return max(1, int(math.Floor(l.share*float64(l.limit)+1e-9)))
}

// forget drops the spends that left the period at now.
func (l *Limiter) forget(now time.Time) {
	cut := now.Add(-l.period)
	i := 0
	for i < len(l.spent) && !l.spent[i].After(cut) {
		i++
	}
	l.spent = l.spent[i:]
}

// Allow reports whether a recheck may make one more request now, and if
// so counts it.
func (l *Limiter) Allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.forget(now)
	if len(l.spent) >= l.capLocked() {
		return false
	}
	l.spent = append(l.spent, now)
	return true
}

// Spent returns how many requests rechecks made in the last period.
func (l *Limiter) Spent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forget(l.now())
	return len(l.spent)
}

// Next returns when Allow will next succeed: now when it would now, the
// zero time when it never will (no share, no limit).
func (l *Limiter) Next() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.forget(now)
	c := l.capLocked()
	switch {
	case c == 0:
		return time.Time{}
	case len(l.spent) < c:
		return now
	}
	// The spend that must leave the period first.
	return l.spent[len(l.spent)-c].Add(l.period)
}
