package ocsfjson

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendUnquoted appends the content of the validated string token raw to
// dst, escapes decoded; a lone surrogate becomes U+FFFD.
func AppendUnquoted(dst, raw []byte) []byte {
	s := raw[1 : len(raw)-1]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2 = hex4(s[i+3 : i+7])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // " \ /
			dst = append(dst, s[i])
		}
	}
	return dst
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c <= '9':
			r |= rune(c - '0')
		case c >= 'a':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// appendString appends s as a JSON string. s is valid UTF-8 (records are,
// record.Builder repairs them); only the quote, the backslash and control
// characters are escaped.
func appendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendOneLine appends the validated JSON value raw as sent but for its
// tabs, carriage returns and line feeds: JSON allows them only as
// insignificant whitespace, so the value is unchanged while a
// pretty-printed record can no longer break a line framing.
func appendOneLine(dst, raw []byte) []byte {
	for {
		i := bytes.IndexAny(raw, "\t\r\n")
		if i < 0 {
			return append(dst, raw...)
		}
		dst = append(dst, raw[:i]...)
		raw = raw[i+1:]
	}
}

// ParseInt reads raw as an integer: a JSON number without fraction or
// exponent, a number with an exact integer value up to 2^53, or a string
// holding such a number (C3: known fields may change type).
func ParseInt(raw []byte) (int64, bool) {
	if IsString(raw) {
		raw = raw[1 : len(raw)-1]
		if len(raw) == 0 || len(raw) > 24 {
			return 0, false
		}
		for _, c := range raw {
			if c == '\\' || isSpace(c) {
				return 0, false
			}
		}
		if end, err := skipNumber(raw, 0); err != nil || end != len(raw) {
			return 0, false
		}
	}
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, false
	}
	var n int64
	neg := raw[0] == '-'
	digits := raw
	if neg {
		digits = raw[1:]
	}
	if len(digits) > 0 && len(digits) <= 18 {
		plain := true
		for _, c := range digits {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if plain {
			if neg {
				n = -n
			}
			return n, true
		}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
		return 0, false
	}
	return int64(f), true
}
