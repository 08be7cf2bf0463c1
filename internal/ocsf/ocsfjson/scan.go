package ocsfjson

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// errInvalidJSON is wrapped by every error the scanner reports.
var errInvalidJSON = errors.New("record is not valid JSON")

// maxDepth bounds the nesting the scanner accepts, as record.Builder does.
const maxDepth = 256

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Value returns the one JSON value raw holds, without the space around it,
// after validating raw: valid UTF-8 holding exactly one JSON value nested
// at most 256 deep. Its error wraps "record is not valid JSON".
func Value(raw []byte) ([]byte, error) {
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("%w: invalid UTF-8", errInvalidJSON)
	}
	start := skipSpace(raw, 0)
	end, err := skipValue(raw, start, 0)
	if err != nil {
		return nil, err
	}
	if skipSpace(raw, end) != len(raw) {
		return nil, fmt.Errorf("%w: data after the value", errInvalidJSON)
	}
	return raw[start:end], nil
}

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
