package window

import (
	"errors"
	"testing"
	"time"
)

func TestStart(t *testing.T) {
	p := Planner{Lag: 30 * time.Minute}
	floor := sec.Add(-92*day + 15*time.Minute + time.Second) // rounded up
	nov1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name        string
		spec        string
		want        time.Time
		wantClamped bool
	}{
		{"a duration back from now is rounded down to a whole second", "48h", sec.Add(-48 * time.Hour), false},
		{"a compound Go duration works", "1h30m", sec.Add(-90 * time.Minute), false},
		{"a number of days works", "30d", sec.Add(-30 * day), false},
		{"a fraction of days works", "1.5d", sec.Add(-36 * time.Hour), false},
		{"zero starts now", "0s", sec, false},
		{"spaces around the value are ignored", "  48h ", sec.Add(-48 * time.Hour), false},
		{"max starts at the floor", "max", floor, false},
		{"MAX is max", "MAX", floor, false},
		{"a duration past max history is clamped to the floor", "100d", floor, true},
		{"a duration of exactly max history is clamped to the floor", "92d", floor, true},
		{"an RFC 3339 time is taken as it is", "2026-11-01T00:00:00Z", nov1, false},
		{"an RFC 3339 time with an offset is the same instant", "2026-11-01T02:00:00+02:00", nov1, false},
		{"fractional seconds are rounded down", "2026-11-01T00:00:00.999Z", nov1, false},
		{"a date is midnight UTC", "2026-11-01", nov1, false},
		{"a time older than max history is clamped to the floor", "2026-01-01T00:00:00Z", floor, true},
		{"now itself is allowed", now.Format(time.RFC3339Nano), sec, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, clamped, err := p.Start(tc.spec, now)
			if err != nil {
				t.Fatalf("Start(%q) = %v", tc.spec, err)
			}
			if !got.Equal(tc.want) || clamped != tc.wantClamped {
				t.Fatalf("Start(%q) = %v, clamped %v; want %v, clamped %v", tc.spec, got, clamped, tc.want, tc.wantClamped)
			}
		})
	}
}

func TestStartParsingErrors(t *testing.T) {
	cases := []struct {
		name string
		spec string
	}{
		{"an empty start is an error", ""},
		{"blank is empty", "   "},
		{"a word is an error", "yesterday"},
		{"a number without a unit is an error", "48"},
		{"a negative duration is an error", "-48h"},
		{"negative days are an error", "-2d"},
		{"days that are not a number are an error", "xd"},
		{"NaN days are an error", "NaNd"},
		{"infinite days are an error", "infd"},
		{"days that overflow are an error", "1e300d"},
		{"a duration that overflows is an error", "9999999999h"},
		{"an impossible date is an error", "2026-13-01"},
		{"a time without a zone is an error", "2026-11-01T00:00:00"},
		{"a time after now is an error", "2026-11-23T00:00:00Z"},
		{"a date after now is an error", "2027-01-01"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := Planner{}.Start(tc.spec, now)
			if !errors.Is(err, ErrBadStart) {
				t.Fatalf("Start(%q) = %v, %v; want an error wrapping ErrBadStart", tc.spec, got, err)
			}
		})
	}
}

// FuzzStart: Start never panics, and a watermark it returns is a whole
// second between the floor and now.
func FuzzStart(f *testing.F) {
	for _, s := range []string{"48h", "30d", "max", "2026-11-01T00:00:00Z", "2026-11-01", "-1h", "1.5d", "", "9999-99-99"} {
		f.Add(s)
	}
	p := Planner{Lag: 30 * time.Minute}
	f.Fuzz(func(t *testing.T, spec string) {
		wm, _, err := p.Start(spec, now)
		if err != nil {
			if !errors.Is(err, ErrBadStart) {
				t.Fatalf("Start(%q) error %v does not wrap ErrBadStart", spec, err)
			}
			return
		}
		if wm.Before(p.Floor(now)) || wm.After(now) || !wm.Equal(wm.Truncate(time.Second)) {
			t.Fatalf("Start(%q) = %v, outside [floor, now] or off the second grid", spec, wm)
		}
	})
}
