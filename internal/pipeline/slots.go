package pipeline

import (
	"context"
	"sync"
	"time"
)

// slots is a weighted semaphore counting the records held between the
// pollers and the sink. Waiters are served in order, so a large page cannot
// starve behind small ones.
//
// No caller waits while holding slots: a stream that needs more than it
// holds calls exchange, which gives back what it holds before it queues for
// the whole amount. Every waiter thus holds nothing, every holder is either
// fetching a page or has handed it to the sink, and both release without
// waiting for slots; with requests clamped to the capacity, the first
// waiter is served once the holders release. That is why the buffer cannot
// deadlock however many streams fill it with reservations.
type slots struct {
	now     func() time.Time
	mu      sync.Mutex
	cap     int
	used    int
	waiters []*slotWaiter
	// progress is when a waiter was last served, or when the queue of
	// waiters last became non-empty if later: the start of the current
	// wait for room, for Stalled.
	progress time.Time
}

type slotWaiter struct {
	n     int
	ready chan struct{}
}

// newSlots returns a semaphore of capacity slots; now stamps the waits.
func newSlots(capacity int, now func() time.Time) *slots { return &slots{cap: capacity, now: now} }

// clamp caps a request at the capacity: a page larger than the whole buffer
// still passes, alone.
func (s *slots) clamp(n int) int {
	if n > s.cap {
		return s.cap
	}
	return n
}

// acquire takes n slots, blocking until they are free or ctx ends. It
// returns the number actually taken (n clamped to the capacity).
func (s *slots) acquire(ctx context.Context, n int) (int, error) {
	return s.exchange(ctx, 0, n)
}

// exchange trades the held slots of its caller for want (clamped to the
// capacity) and returns how many the caller holds afterwards: want, or 0
// with ctx's error. When the difference is free at once and nobody waits,
// the caller keeps its slots and takes the difference; otherwise it gives
// back all it holds first and then waits, in order, for the whole amount,
// so that it never waits while holding slots (no hold-and-wait, hence no
// deadlock between streams that each hold part of the buffer).
func (s *slots) exchange(ctx context.Context, held, want int) (int, error) {
	want = s.clamp(want)
	s.mu.Lock()
	if len(s.waiters) == 0 && s.used-held+want <= s.cap {
		s.used += want - held
		s.mu.Unlock()
		return want, nil
	}
	s.used -= held
	s.grantLocked() // earlier waiters may fit in what was given back
	if len(s.waiters) == 0 && s.used+want <= s.cap {
		s.used += want
		s.mu.Unlock()
		return want, nil
	}
	w := &slotWaiter{n: want, ready: make(chan struct{})}
	if len(s.waiters) == 0 {
		s.progress = s.now()
	}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return want, nil
	case <-ctx.Done():
		s.mu.Lock()
		select {
		case <-w.ready:
			// Granted while we gave up: hand the slots back.
			s.used -= want
			s.grantLocked()
		default:
			for i, x := range s.waiters {
				if x == w {
					s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
					break
				}
			}
			s.grantLocked()
		}
		s.mu.Unlock()
		return 0, ctx.Err()
	}
}

func (s *slots) release(n int) {
	s.mu.Lock()
	s.used -= n
	s.grantLocked()
	s.mu.Unlock()
}

func (s *slots) grantLocked() {
	for len(s.waiters) > 0 {
		w := s.waiters[0]
		if s.used+w.n > s.cap {
			return
		}
		s.used += w.n
		close(w.ready)
		s.waiters = s.waiters[1:]
		s.progress = s.now()
	}
}

func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// waiting returns how many requests wait for room, the records they want,
// and since when none was served (see progress); zeros when none waits.
func (s *slots) waiting() (n, rows int, since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiters) == 0 {
		return 0, 0, time.Time{}
	}
	for _, w := range s.waiters {
		rows += w.n
	}
	return len(s.waiters), rows, s.progress
}
