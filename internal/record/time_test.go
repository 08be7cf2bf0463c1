package record

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// C3, C6: every form of record time the APIs send, and every form
// ParseTime accepted before the range check, still reads.
func TestParseTimeAcceptsTheFormsTheAPISends(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 0, 0, 123e6, time.UTC)
	hour := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, raw string
		want      time.Time
	}{
		{"RFC 3339 with Z reads", `"2026-11-20T10:00:00.123Z"`, at},
		{"an offset with a colon reads", `"2026-11-20T10:00:00.123+00:00"`, at},
		{"an offset without a colon reads (C3)", `"2026-11-20T10:00:00.123+0000"`, at},
		{"a non-zero offset is converted to UTC", `"2026-11-20T11:00:00.123+01:00"`, at},
		{"a time without a zone is UTC", `"2026-11-20T10:00:00.123"`, at},
		{"a space instead of T reads", `"2026-11-20 10:00:00.123Z"`, at},
		{"a space and an offset without a colon read", `"2026-11-20 10:00:00.123+0000"`, at},
		{"a space and no zone read", `"2026-11-20 10:00:00.123"`, at},
		{"nanoseconds read", `"2026-11-20T10:00:00.123000000Z"`, at},
		{"an hour with a zone reads", `"2026-11-20T10Z"`, hour},
		{"an hour without a zone reads", `"2026-11-20T10"`, hour},
		{"a date is its midnight", `"2026-11-20"`, time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)},
		{"epoch milliseconds read (C6)", `1795168800123`, at},
		{"epoch milliseconds in a string read", `"1795168800123"`, at},
		{"fractional epoch seconds read", `1795168800.123`, at},
		{"fractional epoch seconds in a string read", `"1795168800.123"`, at},
		{"whole epoch seconds read", `1795168800`, hour},
		{"epoch milliseconds in exponent form read", `1.795168800123e12`, at},
		{"space around the value is ignored", " \t1795168800123\n", at},
		{"the epoch itself is in range", `0`, time.Unix(0, 0).UTC()},
		{"negative zero is the epoch", `-0`, time.Unix(0, 0).UTC()},
		{"the first instant of 1970 is in range", `"1970-01-01T00:00:00Z"`, time.Unix(0, 0).UTC()},
		{"the last second of 9999 is in range", `"9999-12-31T23:59:59Z"`, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"the last second of 9999 in milliseconds is in range", `253402300799000`, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseTime([]byte(c.raw))
			if err != nil || !got.Equal(c.want) || got.Location() != time.UTC {
				t.Fatalf("ParseTime(%s) = %v, %v; want %v", c.raw, got, err, c.want)
			}
		})
	}
}

// A time that is no time is an error of the right kind, never a wrapped
// int64 or a NaN turned into a date.
func TestParseTimeRefusesWhatIsNoTime(t *testing.T) {
	for _, c := range []struct {
		name, raw string
		want      error // a sentinel, or nil for "unreadable"
	}{
		{"an empty value is missing", ``, ErrTimeMissing},
		{"null is missing", `null`, ErrTimeMissing},
		{"a word is unreadable", `"yesterday"`, nil},
		{"a boolean is unreadable", `true`, nil},
		{"a broken string is unreadable", `"2026-11-20`, nil},
		{"NaN as a number is out of range", `NaN`, ErrTimeOutOfRange},
		{"NaN as a string is out of range", `"NaN"`, ErrTimeOutOfRange},
		{"Inf is out of range", `Inf`, ErrTimeOutOfRange},
		{"+Inf as a string is out of range", `"+Inf"`, ErrTimeOutOfRange},
		{"-Infinity is out of range", `-Infinity`, ErrTimeOutOfRange},
		{"1e300 milliseconds are out of range", `1e300`, ErrTimeOutOfRange},
		{"-1e300 seconds are out of range", `-1e300`, ErrTimeOutOfRange},
		{"-1e300 as a string is out of range", `"-1e300"`, ErrTimeOutOfRange},
		{"1e400, beyond float64, is out of range", `1e400`, ErrTimeOutOfRange},
		{"a negative epoch is out of range", `-1`, ErrTimeOutOfRange},
		{"half a millisecond before the epoch is out of range", `-0.0005`, ErrTimeOutOfRange},
		{"a millisecond after 9999 is out of range", `253402300800000`, ErrTimeOutOfRange},
		{"a fraction after the last second of 9999 is out of range", `253402300799500`, ErrTimeOutOfRange},
		{"the year 1 is out of range", `"0001-01-01T00:00:00Z"`, ErrTimeOutOfRange},
		{"1969 is out of range", `"1969-12-31T23:59:59.999Z"`, ErrTimeOutOfRange},
		{"an offset that carries 9999 into 10000 is out of range", `"9999-12-31T23:59:59-01:00"`, ErrTimeOutOfRange},
		{"a millisecond after 9999's last second is out of range", `"9999-12-31T23:59:59.001Z"`, ErrTimeOutOfRange},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseTime([]byte(c.raw))
			if err == nil {
				t.Fatalf("ParseTime(%s) = %v, want an error", c.raw, got)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("ParseTime(%s): %v, want %v", c.raw, err, c.want)
			}
			if c.want == nil && (errors.Is(err, ErrTimeMissing) || errors.Is(err, ErrTimeOutOfRange)) {
				t.Fatalf("ParseTime(%s): %v, want an unreadable time", c.raw, err)
			}
		})
	}
}

// AppendTime writes what the general formatter writes for TimeLayout,
// in UTC, whatever the time's zone, sub-millisecond part or year.
func TestAppendTimeIsTheLayoutsForm(t *testing.T) {
	t.Parallel()
	east := time.FixedZone("east", 5*3600+30*60)
	check := func(at time.Time) {
		t.Helper()
		want := at.UTC().Format(TimeLayout)
		if got := string(AppendTime([]byte("x"), at)); got != "x"+want {
			t.Fatalf("AppendTime(%v) = %q, want %q", at, got, "x"+want)
		}
	}
	for _, at := range []time.Time{
		{}, time.Unix(0, 0), time.Unix(0, 999_999_999), time.Unix(-1, 0),
		time.Date(2026, 11, 20, 10, 0, 0, 123_456_789, time.UTC),
		time.Date(2026, 11, 20, 23, 59, 59, 999_999_999, east),
		time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(999, 2, 3, 4, 5, 6, 7e6, time.UTC),
	} {
		check(at)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		check(time.Unix(r.Int64N(400_000_000_000)-100_000_000_000, r.Int64N(1e9)).In(east))
	}
}
