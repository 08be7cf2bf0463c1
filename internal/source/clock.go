package source

import "time"

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
