package catalog

import (
	"testing"
	"time"
)

// sources.*.interval reads "auto" (the default: the cadence from the
// budget) or a positive duration, and writes back what it read; 0, a
// negative duration or anything else is refused naming both forms.
func TestIntervalReadsAutoOrAPositiveDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Interval{"auto": IntervalAuto, " AUTO ": IntervalAuto, "30s": Interval(30 * time.Second), "5m": Interval(5 * time.Minute)} {
		var i Interval
		if err := i.UnmarshalText([]byte(in)); err != nil || i != want {
			t.Errorf("%q: %v, %v; want %v", in, i, err, want)
		}
		back, _ := i.MarshalText()
		var again Interval
		if err := again.UnmarshalText(back); err != nil || again != i {
			t.Errorf("%q written as %q reads back as %v, %v", in, back, again, err)
		}
	}
	for _, in := range []string{"0s", "0", "-1m", "soon", ""} {
		var i Interval
		if err := i.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q taken as %v", in, i)
		}
	}
	if d := DefaultSource().Interval; Interval(d) != IntervalAuto {
		t.Errorf("default interval %v, want auto", d)
	}
}
