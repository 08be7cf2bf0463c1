package ocsfrec

import (
	"net/netip"
	"time"

	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/record"
)

// Limits of the OCSF 1.3.0 types (dictionary.json, "types").
const (
	maxString = 65535 // string_t max_len
	maxIP     = 40    // ip_t max_len
)

// MaxFileHash is file_hash_t's max_len in OCSF 1.3.0.
const MaxFileHash = 64

// TimeMs reads raw as a time (C3, C6: ISO 8601 strings, epoch numbers in
// milliseconds or seconds, such numbers as strings) and returns Unix
// milliseconds. The common forms are read without allocating; the rest
// goes to record.ParseTime, so every time the collector accepts as a record
// time is accepted here too.
func TimeMs(raw []byte) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	if raw[0] != '"' {
		n, ok := ocsfjson.ParseInt(raw)
		if !ok {
			return fallbackTime(raw)
		}
		return epochMs(n)
	}
	c := raw[1 : len(raw)-1]
	if ms, ok := isoMs(c); ok {
		return ms, true
	}
	if len(c) > 0 && len(c) <= 18 && digitsOnly(c) {
		n, _ := ocsfjson.ParseInt(c)
		return epochMs(n)
	}
	return fallbackTime(raw)
}

func digitsOnly(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func fallbackTime(raw []byte) (int64, bool) {
	t, err := record.ParseTime(raw)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// epochMs applies record.ParseTime's rule to an integer epoch: below 1e11
// it counts seconds, else milliseconds; the result lies in
// [1970-01-01, 9999-12-31T23:59:59Z].
func epochMs(n int64) (int64, bool) {
	const maxMs = 253402300799000
	if n < 0 {
		return 0, false
	}
	if n < 1e11 {
		n *= 1000
	}
	return n, n <= maxMs
}

// isoMs reads yyyy-mm-ddThh:mm:ss[.fff...][Z|±hh:mm|±hhmm] (the forms the
// API sends), or reports false for anything else.
func isoMs(s []byte) (int64, bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	y, mo, d := num(s[0:4]), num(s[5:7]), num(s[8:10])
	h, mi, sec := num(s[11:13]), num(s[14:16]), num(s[17:19])
	if y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return 0, false
	}
	rest := s[19:]
	nanos := 0
	if len(rest) > 0 && rest[0] == '.' {
		i := 1
		scale := 100000000
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			nanos += int(rest[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == 1 || i > 10 {
			return 0, false
		}
		rest = rest[i:]
	}
	oh, om := 0, 0
	switch {
	case len(rest) == 1 && rest[0] == 'Z':
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, om = num(rest[1:3]), num(rest[4:6])
	case len(rest) == 5 && (rest[0] == '+' || rest[0] == '-'):
		oh, om = num(rest[1:3]), num(rest[3:5])
	default:
		return 0, false
	}
	if oh < 0 || oh > 23 || om < 0 || om > 59 {
		return 0, false
	}
	offset := oh*60 + om
	if rest[0] == '+' {
		offset = -offset
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, nanos, time.UTC)
	if t.Day() != d { // 31 February
		return 0, false
	}
	ms := t.UnixMilli() + int64(offset)*60000
	return ms, ms >= 0
}

// validHostname matches OCSF hostname_t:
// ^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9])$
func validHostname(s []byte) bool {
	if len(s) == 0 || len(s) > maxString {
		return false
	}
	label := 0
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			label++
		case c == '-':
			if label == 0 {
				return false
			}
			label++
		case c == '.':
			if label == 0 || s[i-1] == '-' {
				return false
			}
			label = 0
		default:
			return false
		}
	}
	return label > 0 && s[len(s)-1] != '-'
}

// ValidEmail reports whether s matches OCSF email_t:
// ^[a-zA-Z0-9!#$%&'*+-/=?^_`{|}~.]+@[a-zA-Z0-9-]+\.[a-zA-Z0-9-.]+$
// (the class "+-/" is the range '+' to '/', which holds the comma).
func ValidEmail(s []byte) bool {
	if len(s) > maxString {
		return false
	}
	at := -1
	for i, c := range s {
		if c == '@' {
			at = i
			break
		}
		if !(alnum(c) || c >= '+' && c <= '/' || c == '.' || isLocalPunct(c)) {
			return false
		}
	}
	if at < 1 {
		return false
	}
	d := s[at+1:]
	first := 0
	for first < len(d) && (alnum(d[first]) || d[first] == '-') {
		first++
	}
	if first == 0 || first+1 >= len(d) || d[first] != '.' {
		return false
	}
	for _, c := range d[first+1:] {
		if !(alnum(c) || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isLocalPunct(c byte) bool {
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '=', '?', '^', '_', '`', '{', '|', '}', '~':
		return true
	}
	return false
}

// IPVersion returns 4 or 6 when s is an IP address OCSF's ip_t accepts
// (at most 40 bytes), else 0. IPv4 dotted quads are read without
// allocating.
func IPVersion(s []byte) int {
	if len(s) == 0 || len(s) > maxIP {
		return 0
	}
	if v4(s) {
		return 4
	}
	for _, c := range s {
		if c == ':' {
			a, err := netip.ParseAddr(string(s))
			if err != nil || !a.Is6() {
				return 0
			}
			return 6
		}
	}
	return 0
}

// v4 reports whether s is a dotted quad without leading zeros.
func v4(s []byte) bool {
	parts, n, digits := 0, 0, 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if digits == 0 || n > 255 || (digits > 1 && s[i-digits] == '0') {
				return false
			}
			parts++
			n, digits = 0, 0
			continue
		}
		c := s[i]
		if c < '0' || c > '9' || digits == 3 {
			return false
		}
		n = n*10 + int(c-'0')
		digits++
	}
	return parts == 4
}

// fitsInt32 reports whether n fits OCSF's integer_t as 32-bit consumers
// (Parquet, Security Lake) store it.
func fitsInt32(n int64) bool { return n >= -1<<31 && n <= 1<<31-1 }
