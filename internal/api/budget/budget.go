package budget

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/clock"
)

// Rate describes one bucket of the API (CONTRACT C4): Limit tokens per
// Period, of which the fraction Reserve is left to the user's other
// clients.
type Rate struct {
	Limit   int
	Period  time.Duration
	Reserve float64
}

// DefaultRate is 480 tokens per hour with 10% reserve (seed, C4).
func DefaultRate() Rate { return Rate{Limit: 480, Period: time.Hour, Reserve: 0.1} }

// Pace is how often a round of requests may come, when the streams that
// share a bucket of r make perRound requests between them each round (one
// per poll for most streams; an edge_alerts poll makes more), so that
// together they spend what the bucket refills: the period over the
// rounds the limit allows after the reserve and after aside (the
// fraction of the limit set apart for other work, such as the rechecks of
// older windows):
//
//	period / ((limit*(1-reserve) - aside*limit) / perRound)
//
// 480 an hour, reserve 0.1, aside 0.1 and 3 one-request polls: 3600 s /
// (384 / 3), a round about every 28 s. When aside leaves less than one
// token a period, one token is shared. A zero rate or no request gives 0.
func (r Rate) Pace(aside float64, perRound int) time.Duration {
	if r.Limit <= 0 || r.Period <= 0 || perRound <= 0 {
		return 0
	}
	left := float64(r.Limit) * (1 - r.Reserve - max(aside, 0))
	left = max(left, 1)
	return time.Duration(float64(r.Period) / (left / float64(perRound)))
}

// Observer receives what a budget measures, by functionality: the local
// estimate of the tokens left, the RateLimit-Remaining of the last answer
// and the time spent waiting. *api.Metrics is one. Its methods must be
// safe for concurrent use.
type Observer interface {
	ObserveTokens(functionality string, tokens float64)
	ObserveRemaining(functionality string, remaining int)
	ObserveWait(functionality string, seconds float64)
}

// Priority orders the waiters of a bucket when tokens are scarce (DESIGN
// item 3): fresh windows before backfill, then accounts in turn (the one
// served longest ago first), then the newest window, then arrival.
type Priority struct {
	// Account is the account the request is for; accounts take turns.
	Account string
	// WindowEnd is the end of the window the request serves; a later end
	// goes first among equals.
	WindowEnd time.Time
	// Fresh marks a request for the newest data: a window that ends within
	// one interval of now - lag, or a token renewal. Fresh beats backfill.
	Fresh bool
	// Recheck marks a request that asks a recently fetched window again
	// for late records (C3): after fresh requests, before backfill, so
	// that a long backfill cannot starve rechecks until their windows
	// leave the log. What rechecks spend is bounded apart (the recheck
	// share), so they never take more than that from a backfill.
	Recheck bool
}

// Budget holds one token bucket per (user, functionality) (CONTRACT C4),
// shared by every account and source that spends it. Build one per process
// and pass it to every Client. It is safe for concurrent use.
type Budget struct {
	clk clock.Clock
	obs Observer

	mu      sync.Mutex
	buckets map[bucketKey]*Bucket
}

type bucketKey struct{ user, fn string }

// New returns an empty budget. clk nil means the system clock; obs may be
// nil.
func New(clk clock.Clock, obs Observer) *Budget {
	if clk == nil {
		clk = clock.System{}
	}
	return &Budget{clk: clk, obs: obs, buckets: map[bucketKey]*Bucket{}}
}

// Bucket returns the bucket of user and functionality, creating it with rc
// on first use; later calls return the same bucket whatever their rc.
func (b *Budget) Bucket(user, functionality string, rc Rate) *Bucket {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := bucketKey{user, functionality}
	if bk, ok := b.buckets[k]; ok {
		return bk
	}
	bk := newBucket(functionality, rc, b.clk, b.obs)
	b.buckets[k] = bk
	return bk
}

// Acquire takes one token of the bucket of user and functionality,
// waiting (ctx aware) until one is available and p is the best waiter. The
// bucket is made with rate on first use. Every successful Acquire must be
// followed by exactly one Done of the same bucket.
func (b *Budget) Acquire(ctx context.Context, user, functionality string, rate Rate, p Priority) error {
	return b.Bucket(user, functionality, rate).Acquire(ctx, p)
}

// Done ends a request that Acquire admitted and re-syncs the bucket from
// its answer (see Bucket.Done).
func (b *Budget) Done(user, functionality string, h Headers, status int) {
	b.lookup(user, functionality).Done(h, status)
}

// Period returns the refill period of the bucket of user and
// functionality: the longest a RateLimit-Reset is honoured.
func (b *Budget) Period(user, functionality string) time.Duration {
	return b.lookup(user, functionality).Period()
}

// lookup returns an existing bucket; one that does not exist yet is made
// with DefaultRate.
func (b *Budget) lookup(user, functionality string) *Bucket {
	b.mu.Lock()
	bk := b.buckets[bucketKey{user, functionality}]
	b.mu.Unlock()
	if bk == nil {
		bk = b.Bucket(user, functionality, DefaultRate())
	}
	return bk
}

// Rate returns the rate of the bucket of user and functionality as it
// stands: its limit is the server's RateLimit-Limit once an answer said
// one (C4), else the configured one. The bucket is made with rate on
// first use.
func (b *Budget) Rate(user, functionality string, rate Rate) Rate {
	return b.Bucket(user, functionality, rate).Rate()
}

// Remaining returns the local token estimate of every bucket by
// functionality (summed over users), for metrics and the state command.
func (b *Budget) Remaining() map[string]float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]float64, len(b.buckets))
	for k, bk := range b.buckets {
		out[k.fn] += bk.Tokens()
	}
	return out
}

// Bucket is the local model of one server bucket: capacity
// limit*(1-reserve), refilled at limit/period*(1-reserve), corrected from
// the RateLimit-* headers of every answer. It is safe for concurrent use.
type Bucket struct {
	fn  string
	clk clock.Clock
	obs Observer

	mu        sync.Mutex
	limit     float64
	period    time.Duration
	reserve   float64
	tokens    float64
	last      time.Time
	notBefore time.Time
	inFlight  int
	waiters   []*waiter
	arrivals  uint64
	serves    uint64
	served    map[string]uint64 // account -> serve number of its last grant
	changed   chan struct{}     // closed and replaced on every change
}

type waiter struct {
	p       Priority
	arrival uint64
}

func newBucket(fn string, rc Rate, clk clock.Clock, obs Observer) *Bucket {
	if rc.Limit <= 0 || rc.Period <= 0 {
		rc = DefaultRate()
	}
	k := &Bucket{
		fn: fn, clk: clk, obs: obs,
		limit: float64(rc.Limit), period: rc.Period, reserve: rc.Reserve,
		last:    clk.Now(),
		served:  map[string]uint64{},
		changed: make(chan struct{}),
	}
	k.tokens = k.capacity()
	return k
}

func (k *Bucket) capacity() float64 { return k.limit * (1 - k.reserve) }

// rate is tokens per second.
func (k *Bucket) rate() float64 { return k.capacity() / k.period.Seconds() }

func (k *Bucket) refill(now time.Time) {
	if el := now.Sub(k.last); el > 0 {
		k.tokens = math.Min(k.capacity(), k.tokens+el.Seconds()*k.rate())
		k.last = now
	}
}

func (k *Bucket) broadcast() {
	close(k.changed)
	k.changed = make(chan struct{})
	if k.obs != nil {
		k.obs.ObserveTokens(k.fn, k.tokens)
	}
}

// better reports whether a goes before b.
func (k *Bucket) better(a, b *waiter) bool {
	if a.p.Fresh != b.p.Fresh {
		return a.p.Fresh
	}
	if a.p.Recheck != b.p.Recheck {
		return a.p.Recheck
	}
	if sa, sb := k.served[a.p.Account], k.served[b.p.Account]; sa != sb {
		return sa < sb
	}
	if !a.p.WindowEnd.Equal(b.p.WindowEnd) {
		return a.p.WindowEnd.After(b.p.WindowEnd)
	}
	return a.arrival < b.arrival
}

func (k *Bucket) best() *waiter {
	var best *waiter
	for _, w := range k.waiters {
		if best == nil || k.better(w, best) {
			best = w
		}
	}
	return best
}

func (k *Bucket) remove(w *waiter) {
	for i, x := range k.waiters {
		if x == w {
			k.waiters = append(k.waiters[:i], k.waiters[i+1:]...)
			return
		}
	}
}

// Acquire takes one token, waiting until one is available and no better
// waiter is queued. It returns ctx's error if ctx ends first.
func (k *Bucket) Acquire(ctx context.Context, p Priority) error {
	start := k.clk.Now()
	k.mu.Lock()
	k.arrivals++
	w := &waiter{p: p, arrival: k.arrivals}
	k.waiters = append(k.waiters, w)
	for {
		now := k.clk.Now()
		k.refill(now)
		var timer <-chan time.Time
		if k.best() == w {
			if !now.Before(k.notBefore) && k.tokens >= 1 {
				k.tokens--
				k.inFlight++
				k.serves++
				k.served[p.Account] = k.serves
				k.remove(w)
				k.broadcast()
				k.mu.Unlock()
				k.waited(start)
				return nil
			}
			wait := k.notBefore.Sub(now)
			if k.tokens < 1 {
				need := time.Duration(math.Ceil((1 - k.tokens) / k.rate() * float64(time.Second)))
				wait = max(wait, need)
			}
			timer = k.clk.After(max(wait, time.Millisecond))
		}
		ch := k.changed
		k.mu.Unlock()
		select {
		case <-timer:
		case <-ch:
		case <-ctx.Done():
			k.mu.Lock()
			k.remove(w)
			k.broadcast()
			k.mu.Unlock()
			k.waited(start)
			return ctx.Err()
		}
		k.mu.Lock()
	}
}

// Done ends a request that Acquire admitted and re-syncs the bucket from its
// answer (CONTRACT C4: the headers are the truth, others spend the same
// bucket). h may be empty (no answer); status is the HTTP status or 0. A
// Reset beyond the bucket's period counts as one period: by C4 a token
// comes back within it.
func (k *Bucket) Done(h Headers, status int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	h = h.Clamp(k.period)
	if k.inFlight > 0 {
		k.inFlight--
	}
	now := k.clk.Now()
	k.refill(now)
	if h.HasLimit && float64(h.Limit) != k.limit {
		// The server's limit wins over the configured one; keep the
		// same fraction of the bucket.
		frac := k.tokens / k.capacity()
		k.limit = float64(h.Limit)
		k.tokens = frac * k.capacity()
	}
	if h.HasRemaining {
		if k.obs != nil {
			k.obs.ObserveRemaining(k.fn, h.Remaining)
		}
		// Our share of what the server has left: keep the reserve for
		// the user's other clients, and count our own requests that are
		// already on their way.
		avail := float64(h.Remaining) - k.reserve*k.limit - float64(k.inFlight)
		switch {
		case avail < k.tokens:
			k.tokens = math.Max(avail, -k.capacity())
		case k.inFlight == 0:
			// Nothing of ours in flight: the answer is current, and
			// the server refilled faster than our cautious model.
			k.tokens = math.Min(avail, k.capacity())
		}
		if h.Remaining == 0 && h.HasReset && h.Reset > 0 {
			k.notBefore = later(k.notBefore, now.Add(h.Reset))
		}
	}
	if status == 429 {
		k.tokens = math.Min(k.tokens, 0)
		reset := time.Duration(float64(k.period) / k.limit)
		if h.HasReset && h.Reset > 0 {
			reset = h.Reset
		}
		k.notBefore = later(k.notBefore, now.Add(reset))
	}
	k.broadcast()
}

// waited reports the wait of an Acquire that began at start.
func (k *Bucket) waited(start time.Time) {
	if k.obs != nil {
		if s := k.clk.Now().Sub(start).Seconds(); s > 0 {
			k.obs.ObserveWait(k.fn, s)
		}
	}
}

// Tokens returns the local estimate of the tokens left.
func (k *Bucket) Tokens() float64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refill(k.clk.Now())
	return k.tokens
}

// NotBefore returns the time before which no request may be sent (from a
// RateLimit-Reset), zero when none.
func (k *Bucket) NotBefore() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.notBefore
}

// Rate returns the bucket's rate as it stands: the limit the server last
// said (RateLimit-Limit, C4) or the configured one, the period and the
// reserve.
func (k *Bucket) Rate() Rate {
	k.mu.Lock()
	defer k.mu.Unlock()
	return Rate{Limit: int(k.limit), Period: k.period, Reserve: k.reserve}
}

// Period returns the bucket's refill period (api.rate.period,
// edge.rate.period): the longest a RateLimit-Reset is honoured.
func (k *Bucket) Period() time.Duration { return k.period }

// Functionality returns the bucket's functionality name.
func (k *Bucket) Functionality() string { return k.fn }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
