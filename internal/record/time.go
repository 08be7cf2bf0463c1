package record

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// TimeLayout is the form of every time the collector writes: RFC 3339 with
// milliseconds in UTC (CONTRACT C7).
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t as RFC 3339 with milliseconds in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// AppendTime appends t as RFC 3339 with milliseconds in UTC: what
// t.UTC().AppendFormat(dst, TimeLayout) appends, written digit by digit
// for the years 0 to 9999 (every envelope has four times; the general
// formatter was 6 % of the pipeline's CPU).
func AppendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, TimeLayout)
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(dst,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

var timeLayouts = []string{
	time.RFC3339Nano,                     // 2026-11-20T10:00:00.123Z, +00:00
	"2006-01-02T15:04:05.999999999Z0700", // +0000 offsets (C3)
	"2006-01-02T15:04:05.999999999",      // no zone: UTC (seed: all times are UTC)
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15Z07:00",
	"2006-01-02T15",
	"2006-01-02",
}

// ErrTimeMissing is wrapped by ParseTime's error for an empty or null time.
var ErrTimeMissing = errors.New("record time is missing")

// ErrTimeOutOfRange is wrapped by ParseTime's error for a time that reads
// as a number or date but is not finite or lies outside
// [1970-01-01T00:00:00Z, 9999-12-31T23:59:59Z]: NaN, Inf, 1e300
// milliseconds (which would wrap around int64), negative epochs, the year
// 0001.
var ErrTimeOutOfRange = errors.New("record time out of range")

// minTimeMs and maxTimeMs bound the record times ParseTime accepts, as Unix
// milliseconds: 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
const (
	minTimeMs = 0
	maxTimeMs = 253402300799000
	timeRange = "[1970-01-01T00:00:00Z, 9999-12-31T23:59:59Z]"
)

// ParseTime reads a record time leniently (CONTRACT C3, C6): an ISO 8601
// string with or without fraction, with Z, +00:00 or +0000 offsets or none
// (UTC), or a JSON number of epoch milliseconds (edge) or seconds (a number
// below 1e11 is taken as seconds), or such a number as a string. raw is the
// JSON value as sent, quotes included. The result is in UTC and within
// [1970-01-01T00:00:00Z, 9999-12-31T23:59:59Z]. An empty or null raw is an
// error wrapping ErrTimeMissing; NaN, infinities and times outside the range
// are an error wrapping ErrTimeOutOfRange.
func ParseTime(raw []byte) (time.Time, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, ErrTimeMissing
	}
	if raw[0] == '"' {
		s, err := strconv.Unquote(string(raw))
		if err != nil {
			return time.Time{}, fmt.Errorf("record time %s: %w", raw, err)
		}
		return ParseTimeString(s)
	}
	return parseEpoch(string(raw))
}

// ParseTimeString is ParseTime for an already unquoted string; a string of
// digits is taken as an epoch number.
func ParseTimeString(s string) (time.Time, error) {
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Before(time.UnixMilli(minTimeMs)) || t.After(time.UnixMilli(maxTimeMs)) {
				return time.Time{}, fmt.Errorf("%w: %q is outside %s", ErrTimeOutOfRange, s, timeRange)
			}
			return t.UTC(), nil
		}
	}
	t, err := parseEpoch(s)
	switch {
	case err == nil:
		return t, nil
	case errors.Is(err, ErrTimeOutOfRange):
		return time.Time{}, err
	}
	return time.Time{}, fmt.Errorf("record time %q is not an ISO 8601 time or epoch number", s)
}

func parseEpoch(s string) (time.Time, error) {
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return time.Time{}, fmt.Errorf("%w: %s is beyond float64", ErrTimeOutOfRange, s)
	case err != nil:
		return time.Time{}, fmt.Errorf("record time %s is not a number: %w", s, err)
	case math.IsNaN(f) || math.IsInf(f, 0):
		return time.Time{}, fmt.Errorf("%w: %s is not a finite number", ErrTimeOutOfRange, s)
	}
	if f < 1e11 { // before 1973 in milliseconds: these are seconds
		f *= 1000
	}
	// Compare as float64 first: converting 1e300 to int64 is undefined.
	if !(f >= minTimeMs && f < maxTimeMs+1000) || int64(f) > maxTimeMs {
		return time.Time{}, fmt.Errorf("%w: %s is outside %s", ErrTimeOutOfRange, s, timeRange)
	}
	return time.UnixMilli(int64(f)).UTC(), nil
}
