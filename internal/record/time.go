package record

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// TimeLayout is the form of every time the collector writes: RFC 3339 with
// milliseconds in UTC (CONTRACT C7).
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t as RFC 3339 with milliseconds in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// AppendTime appends t as RFC 3339 with milliseconds in UTC.
func AppendTime(dst []byte, t time.Time) []byte { return t.UTC().AppendFormat(dst, TimeLayout) }

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

// ParseTime reads a record time leniently (CONTRACT C3, C6): an ISO 8601
// string with or without fraction, with Z, +00:00 or +0000 offsets or none
// (UTC), or a JSON number of epoch milliseconds (edge) or seconds (a number
// below 1e11 is taken as seconds). raw is the JSON value as sent, quotes
// included. The result is in UTC.
func ParseTime(raw []byte) (time.Time, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, fmt.Errorf("record time is missing")
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
			return t.UTC(), nil
		}
	}
	if t, err := parseEpoch(s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("record time %q is not an ISO 8601 time or epoch number", s)
}

func parseEpoch(s string) (time.Time, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("record time %s is not a number: %w", s, err)
	}
	if f < 1e11 { // before 1973 in milliseconds: these are seconds
		f *= 1000
	}
	ms := int64(f)
	return time.UnixMilli(ms).UTC(), nil
}
