package file

import "sync"

// chanQueue is the list of batches waiting for a stream's leader.
type chanQueue struct {
	mu sync.Mutex
	q  []*pending
}

func (c *chanQueue) push(p *pending) {
	c.mu.Lock()
	c.q = append(c.q, p)
	c.mu.Unlock()
}

// take empties the queue for a leader and marks what it took.
func (c *chanQueue) take() []*pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.q
	c.q = nil
	for _, p := range g {
		p.taken = true
	}
	return g
}

// remove drops p if no leader took it yet and reports whether it did.
func (c *chanQueue) remove(p *pending) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.taken {
		return false
	}
	for i, q := range c.q {
		if q == p {
			c.q = append(c.q[:i], c.q[i+1:]...)
			return true
		}
	}
	return false
}
