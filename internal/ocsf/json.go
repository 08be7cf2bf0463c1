package ocsf

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// errInvalidJSON is wrapped by every error the scanner reports.
var errInvalidJSON = errors.New("record is not valid JSON")

// maxDepth bounds the nesting the scanner accepts, as record.Builder does.
const maxDepth = 256

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipValue validates the JSON value starting at b[i] (no leading space)
// and returns the index just after it.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, fmt.Errorf("%w: unexpected end", errInvalidJSON)
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := skipString(b, i)
		return end, err
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return i, fmt.Errorf("%w: nested deeper than %d", errInvalidJSON, maxDepth)
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, fmt.Errorf("%w: member name expected at %d", errInvalidJSON, i)
				}
				if i, _, err = skipString(b, i); err != nil {
					return i, err
				}
				i = skipSpace(b, i)
				if i >= len(b) || b[i] != ':' {
					return i, fmt.Errorf("%w: colon expected at %d", errInvalidJSON, i)
				}
				i = skipSpace(b, i+1)
			}
			if i, err = skipValue(b, i, depth+1); err != nil {
				return i, err
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, fmt.Errorf("%w: unexpected end", errInvalidJSON)
			}
			if b[i] == closer {
				return i + 1, nil
			}
			if b[i] != ',' {
				return i, fmt.Errorf("%w: comma expected at %d", errInvalidJSON, i)
			}
			i = skipSpace(b, i+1)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	}
	return i, fmt.Errorf("%w: unexpected byte %q at %d", errInvalidJSON, b[i], i)
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, fmt.Errorf("%w: bad literal at %d", errInvalidJSON, i)
	}
	return i + len(lit), nil
}

// skipString validates the string starting at b[i] ('"') and returns the
// index after its closing quote and whether it holds escapes.
func skipString(b []byte, i int) (int, bool, error) {
	esc := false
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c < 0x20:
			return i, esc, fmt.Errorf("%w: control character in a string at %d", errInvalidJSON, i)
		case c == '\\':
			esc = true
			i++
			if i >= len(b) {
				break
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex4(b[i+1:i+5]) {
					return i, esc, fmt.Errorf("%w: bad \\u escape at %d", errInvalidJSON, i)
				}
				i += 4
			default:
				return i, esc, fmt.Errorf("%w: bad escape at %d", errInvalidJSON, i)
			}
		}
	}
	return i, esc, fmt.Errorf("%w: unterminated string", errInvalidJSON)
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func skipNumber(b []byte, i int) (int, error) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return i, fmt.Errorf("%w: bad number at %d", errInvalidJSON, start)
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i, fmt.Errorf("%w: bad number at %d", errInvalidJSON, start)
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, fmt.Errorf("%w: bad number at %d", errInvalidJSON, start)
		}
	}
	return i, nil
}

// skipValid returns the index just after the value at b[i] (no leading
// space) of a text skipValue has validated: it only counts brackets and
// skips strings.
func skipValid(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			i = closingQuote(b, i+1)
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		default:
			if depth == 0 {
				for i < len(b) && !isDelimiter(b[i]) {
					i++
				}
				return i
			}
		}
	}
	return i
}

// closingQuote returns the index of the quote that ends the validated
// string whose content starts at b[i]. Most strings of a record are
// short: a loop beats bytes.IndexByte's call.
func closingQuote(b []byte, i int) int {
	for ; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i
}

func isDelimiter(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ':' || isSpace(c)
}

// members iterates over the members of a JSON object that skipValue has
// already validated. The zero value iterates over nothing.
type members struct {
	b []byte
	i int
}

// objectMembers returns an iterator over the members of raw, or false
// when raw is not an object.
func objectMembers(raw []byte) (members, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return members{}, false
	}
	return members{b: raw, i: 1}, true
}

// next returns the next member's name (the quoted token as sent) and value
// (the raw token, without surrounding space).
func (m *members) next() (name, value []byte, ok bool) {
	i := skipSpace(m.b, m.i)
	if i >= len(m.b) || m.b[i] != '"' {
		m.i = len(m.b)
		return nil, nil, false
	}
	end := skipValid(m.b, i)
	name = m.b[i:end]
	i = skipSpace(m.b, end)
	i = skipSpace(m.b, i+1) // the colon
	vend := skipValid(m.b, i)
	value = m.b[i:vend]
	i = skipSpace(m.b, vend)
	if i < len(m.b) && m.b[i] == ',' {
		i++
	}
	m.i = i
	return name, value, true
}

// elements iterates over the elements of a validated JSON array.
type elements struct {
	b []byte
	i int
}

// arrayElements returns an iterator over the elements of raw, or false
// when raw is not an array.
func arrayElements(raw []byte) (elements, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return elements{}, false
	}
	return elements{b: raw, i: 1}, true
}

func (e *elements) next() ([]byte, bool) {
	i := skipSpace(e.b, e.i)
	if i >= len(e.b) || e.b[i] == ']' {
		e.i = len(e.b)
		return nil, false
	}
	end := skipValid(e.b, i)
	v := e.b[i:end]
	i = skipSpace(e.b, end)
	if i < len(e.b) && e.b[i] == ',' {
		i++
	}
	e.i = i
	return v, true
}

// isString reports whether raw is a JSON string token.
func isString(raw []byte) bool { return len(raw) >= 2 && raw[0] == '"' }

// isNull reports whether raw is absent or the JSON null.
func isNull(raw []byte) bool { return raw == nil || string(raw) == "null" }

// appendUnquoted appends the content of the validated string token raw to
// dst, escapes decoded; a lone surrogate becomes U+FFFD.
func appendUnquoted(dst, raw []byte) []byte {
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

// parseInt reads raw as an integer: a JSON number without fraction or
// exponent, a number with an exact integer value up to 2^53, or a string
// holding such a number (C3: known fields may change type).
func parseInt(raw []byte) (int64, bool) {
	if isString(raw) {
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

// fitsInt32 reports whether n fits OCSF's integer_t as 32-bit consumers
// (Parquet, Security Lake) store it.
func fitsInt32(n int64) bool { return n >= -1<<31 && n <= 1<<31-1 }
