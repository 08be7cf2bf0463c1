package api

import (
	"context"
	"time"
)

// Clock is the time source of the client, the budget and the pollers.
// Tests run with the real clock inside testing/synctest, or inject one that
// follows a simulator's clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After sends the time on the returned channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the Clock of package time.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

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
