package catalog

import (
	"fmt"
	"strings"
	"time"
)

// Interval is sources.*.interval, how often a caught-up stream asks for
// its newest records: "auto" (IntervalAuto, the default) or a positive
// duration. Auto polls as often as the stream's share of its rate budget
// allows (package source: the cadence from the budget, never below
// source.MinCadence); a duration polls at that interval, as it always did.
type Interval time.Duration

// IntervalAuto is the interval "auto": the cadence is learnt from the
// budget. It is the zero value, so that SourceSettings.Interval 0 means
// auto.
const IntervalAuto Interval = 0

// UnmarshalText reads "auto" or a positive duration ("30s", "5m").
func (i *Interval) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.EqualFold(s, "auto") {
		*i = IntervalAuto
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("invalid interval %q (write auto, or a positive duration such as 30s or 5m)", s)
	}
	*i = Interval(d)
	return nil
}

// MarshalText writes "auto" or the duration.
func (i Interval) MarshalText() ([]byte, error) {
	if i == IntervalAuto {
		return []byte("auto"), nil
	}
	return []byte(time.Duration(i).String()), nil
}

// String is MarshalText's text.
func (i Interval) String() string {
	b, _ := i.MarshalText()
	return string(b)
}

// Every returns d as a configured interval (a pointer, for a
// SourceOverride).
func Every(d time.Duration) *Interval {
	i := Interval(d)
	return &i
}
