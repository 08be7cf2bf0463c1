package pipeline

import (
	"context"
	"sync"
)

// slots is a weighted semaphore counting the records held between the
// pollers and the sink. Waiters are served in order, so a large page cannot
// starve behind small ones.
type slots struct {
	mu      sync.Mutex
	cap     int
	used    int
	waiters []*slotWaiter
}

type slotWaiter struct {
	n     int
	ready chan struct{}
}

func newSlots(capacity int) *slots { return &slots{cap: capacity} }

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
	n = s.clamp(n)
	s.mu.Lock()
	if len(s.waiters) == 0 && s.used+n <= s.cap {
		s.used += n
		s.mu.Unlock()
		return n, nil
	}
	w := &slotWaiter{n: n, ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
		s.mu.Lock()
		select {
		case <-w.ready:
			// Granted while we gave up: hand the slots back.
			s.used -= n
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
	}
}

func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}
