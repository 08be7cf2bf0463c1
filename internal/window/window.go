package window

import (
	"fmt"
	"time"
)

// Window is a half-open time range [Start, End) (CONTRACT C3).
type Window struct {
	Start, End time.Time
}

// Duration returns End - Start.
func (w Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// Empty reports whether the window holds no instant.
func (w Window) Empty() bool { return !w.End.After(w.Start) }

// Contains reports whether t is in [Start, End).
func (w Window) Contains(t time.Time) bool { return !t.Before(w.Start) && t.Before(w.End) }

// String formats the window as [start, end) in RFC 3339 with milliseconds.
func (w Window) String() string {
	return fmt.Sprintf("[%s, %s)", w.Start.UTC().Format("2006-01-02T15:04:05.000Z"), w.End.UTC().Format("2006-01-02T15:04:05.000Z"))
}
