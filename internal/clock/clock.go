// Package clock is the time source the client, the budget and the pollers
// share: one interface, so that a test can hand them all the same clock
// (a simulator's, or the real one inside a testing/synctest bubble).
// It imports nothing of the module.
package clock

import (
	"context"
	"time"
)

// Clock is a time source.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After sends the time on the returned channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

// System is the Clock of package time. Its zero value is ready to use.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Sleep waits d on clk, or until ctx ends: then it returns ctx's error. A
// d of zero or less does not wait.
func Sleep(ctx context.Context, clk Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-clk.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
