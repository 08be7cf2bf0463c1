package window

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrBadStart is wrapped by Start's errors.
var ErrBadStart = errors.New("invalid start")

// Start resolves a configured first-run start into a watermark at now. spec
// is one of:
//
//   - a duration back from now: a Go duration ("48h", "90m") or a number of
//     days ("30d", "1.5d");
//   - "max": as far back as the API reaches, Floor(now);
//   - a time: RFC 3339 ("2026-11-01T00:00:00Z", fractions and offsets
//     allowed) or a UTC date ("2026-11-01").
//
// The watermark is rounded down to a whole second (asking a little more,
// never less) and clamped to Floor(now); clamped reports whether the
// configured start was earlier than the API reaches (the caller logs it).
// An empty spec, a negative duration, a time after now or anything else is
// an error wrapping ErrBadStart.
func (p Planner) Start(spec string, now time.Time) (watermark time.Time, clamped bool, err error) {
	p = p.withDefaults()
	floor := p.Floor(now)
	s := strings.TrimSpace(spec)
	var t time.Time
	switch {
	case s == "":
		return time.Time{}, false, fmt.Errorf("start: empty; want a duration back from now (48h, 30d), max or an RFC 3339 time: %w", ErrBadStart)
	case strings.EqualFold(s, "max"):
		return floor, false, nil
	case len(s) >= len("2006-01-02") && s[4] == '-':
		layout := time.RFC3339Nano
		if len(s) == len("2006-01-02") {
			layout = time.DateOnly
		}
		t, err = time.Parse(layout, s)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("start %q: not an RFC 3339 time: %w: %w", spec, ErrBadStart, err)
		}
		if t.After(now) {
			return time.Time{}, false, fmt.Errorf("start %q: after now (%s): %w", spec, now.UTC().Format(time.RFC3339), ErrBadStart)
		}
	default:
		back, err := parseBack(s)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("start %q: want a duration back from now (48h, 30d), max or an RFC 3339 time: %w: %w", spec, ErrBadStart, err)
		}
		if back >= p.MaxHistory {
			return floor, true, nil
		}
		t = now.Add(-back)
	}
	t = t.Truncate(time.Second)
	if t.Before(floor) {
		return floor, true, nil
	}
	return t, false, nil
}

// maxDays bounds a day count so that it converts to a Duration.
const maxDays = float64(1<<63-1) / float64(24*time.Hour)

// parseBack parses a non-negative Go duration or a number of days ("30d").
func parseBack(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return 0, fmt.Errorf("days %q: %w", n, err)
		}
		if days != days || days >= maxDays || days <= -maxDays { // NaN or overflow
			return 0, fmt.Errorf("days %q out of range", n)
		}
		d = time.Duration(days * float64(24*time.Hour))
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, err
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %s", d)
	}
	return d, nil
}
