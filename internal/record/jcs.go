package record

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrInvalidJSON is wrapped by every canonicalization error: the input is not
// one well-formed JSON value.
var ErrInvalidJSON = errors.New("invalid JSON")

// maxDepth bounds the nesting of arrays and objects the canonicalizer accepts,
// so a hostile body cannot exhaust the stack.
const maxDepth = 256

// AppendCanonical appends the RFC 8785 (JCS) canonical form of the JSON value in
// src to dst and returns the extended buffer. Object members are sorted by the
// UTF-16 code units of their names, strings are written with the minimal JCS
// escapes, numbers in the ECMAScript shortest form, and insignificant
// whitespace is removed. Trailing non-space bytes after the value are an
// error.
func AppendCanonical(dst, src []byte) ([]byte, error) {
	var c canon
	out, _, err := c.run(dst, src, "")
	return out, err
}

// AppendCanonicalField is AppendCanonical that also returns the raw bytes (a
// subslice of src) of the top-level member named field, or nil when the value
// is not an object or has no such member. The collector finds a record's time
// this way without decoding the record twice.
func AppendCanonicalField(dst, src []byte, field string) (out, fieldRaw []byte, err error) {
	var c canon
	return c.run(dst, src, field)
}

// Canonical returns the RFC 8785 canonical form of the JSON value in src.
func Canonical(src []byte) ([]byte, error) {
	return AppendCanonical(make([]byte, 0, len(src)), src)
}

// run canonicalizes src onto dst, reusing c's working buffers.
func (c *canon) run(dst, src []byte, field string) (out, fieldRaw []byte, err error) {
	c.src, c.pos, c.field, c.fieldRaw = src, 0, field, nil
	c.members = c.members[:0]
	out, err = c.value(dst, 0)
	if err != nil {
		return dst, nil, err
	}
	c.skipSpace()
	if c.pos != len(c.src) {
		return dst, nil, c.errorf("unexpected data after the value")
	}
	fieldRaw = c.fieldRaw
	// Drop the references into src so a reused canon does not keep the
	// last page alive.
	c.src, c.fieldRaw = nil, nil
	clear(c.members[:cap(c.members)])
	return out, fieldRaw, nil
}

type canon struct {
	src []byte
	pos int
	// scratch holds member boundaries while an object is sorted; it is reused
	// by nested objects through a stack discipline (see object).
	members []member
	// scratch holds an object's unsorted members while they are rewritten.
	scratch []byte
	// field, when set, names a member of the top-level object whose raw
	// value is captured in fieldRaw on the way.
	field    string
	fieldRaw []byte
}

type member struct {
	key        []byte // decoded name, for sorting
	start, end int    // canonical "name":value in the output buffer
}

func (c *canon) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrInvalidJSON, c.pos, fmt.Sprintf(format, args...))
}

func (c *canon) skipSpace() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canon) value(dst []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, c.errorf("nesting deeper than %d", maxDepth)
	}
	c.skipSpace()
	if c.pos >= len(c.src) {
		return dst, c.errorf("unexpected end of input")
	}
	switch b := c.src[c.pos]; {
	case b == '{':
		return c.object(dst, depth)
	case b == '[':
		return c.array(dst, depth)
	case b == '"':
		s, err := c.str()
		if err != nil {
			return dst, err
		}
		return appendJCSString(dst, s), nil
	case b == 't':
		return c.literal(dst, "true")
	case b == 'f':
		return c.literal(dst, "false")
	case b == 'n':
		return c.literal(dst, "null")
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number(dst)
	default:
		return dst, c.errorf("unexpected character %q", b)
	}
}

func (c *canon) literal(dst []byte, lit string) ([]byte, error) {
	if len(c.src)-c.pos < len(lit) || string(c.src[c.pos:c.pos+len(lit)]) != lit {
		return dst, c.errorf("invalid literal")
	}
	c.pos += len(lit)
	return append(dst, lit...), nil
}

func (c *canon) array(dst []byte, depth int) ([]byte, error) {
	c.pos++ // [
	dst = append(dst, '[')
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == ']' {
		c.pos++
		return append(dst, ']'), nil
	}
	for {
		var err error
		if dst, err = c.value(dst, depth+1); err != nil {
			return dst, err
		}
		c.skipSpace()
		if c.pos >= len(c.src) {
			return dst, c.errorf("unterminated array")
		}
		switch c.src[c.pos] {
		case ',':
			c.pos++
			dst = append(dst, ',')
		case ']':
			c.pos++
			return append(dst, ']'), nil
		default:
			return dst, c.errorf("expected , or ] in array")
		}
	}
}

func (c *canon) object(dst []byte, depth int) ([]byte, error) {
	c.pos++ // {
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		return append(dst, '{', '}'), nil
	}
	// Members are written to dst in input order first, then rearranged in
	// sorted order once the object is complete.
	base := len(dst)
	mark := len(c.members)
	for {
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return dst, c.errorf("expected a member name")
		}
		key, err := c.str()
		if err != nil {
			return dst, err
		}
		start := len(dst)
		dst = appendJCSString(dst, key)
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != ':' {
			return dst, c.errorf("expected : after a member name")
		}
		c.pos++
		dst = append(dst, ':')
		c.skipSpace()
		vstart := c.pos
		if dst, err = c.value(dst, depth+1); err != nil {
			return dst, err
		}
		if depth == 0 && c.field != "" && string(key) == c.field {
			c.fieldRaw = c.src[vstart:c.pos]
		}
		c.members = append(c.members, member{key: key, start: start, end: len(dst)})
		c.skipSpace()
		if c.pos >= len(c.src) {
			return dst, c.errorf("unterminated object")
		}
		if c.src[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.src[c.pos] == '}' {
			c.pos++
			break
		}
		return dst, c.errorf("expected , or } in object")
	}
	ms := c.members[mark:]
	cmp := func(a, b member) int { return compareUTF16(a.key, b.key) }
	if !slices.IsSortedFunc(ms, cmp) {
		slices.SortStableFunc(ms, cmp)
	}
	// Rewrite the members in sorted order with commas between them. A
	// repeated name keeps its last value, as ECMAScript's JSON.parse (the
	// parser RFC 8785 builds on) does.
	c.scratch = append(c.scratch[:0], dst[base:]...)
	dst = append(dst[:base], '{')
	first := true
	for i, m := range ms {
		if i+1 < len(ms) && bytes.Equal(ms[i+1].key, m.key) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, c.scratch[m.start-base:m.end-base]...)
	}
	dst = append(dst, '}')
	c.members = c.members[:mark]
	return dst, nil
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785 section
// 3.2.3 requires. For strings without characters above U+FFFF this is the
// same as byte order, which is the fast path.
func compareUTF16(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		if a[i] < 0xF0 && b[i] < 0xF0 {
			// Both bytes start or continue characters in the BMP: UTF-8 byte
			// order equals code point order equals UTF-16 order here.
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
		return compareUTF16Slow(a[i:], b[i:])
	}
	return len(a) - len(b)
}

func compareUTF16Slow(a, b []byte) int {
	ua := utf16.Encode([]rune(string(a)))
	ub := utf16.Encode([]rune(string(b)))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			if ua[i] < ub[i] {
				return -1
			}
			return 1
		}
	}
	return len(ua) - len(ub)
}

// str decodes the string at c.pos and leaves c.pos after its closing quote.
// Without escapes the result is a sub-slice of the input; otherwise a new
// buffer. Callers must not modify it.
func (c *canon) str() ([]byte, error) {
	c.pos++ // opening quote
	start := c.pos
	// Fast path: no escapes, valid UTF-8, no control characters.
	for c.pos < len(c.src) {
		b := c.src[c.pos]
		if b == '"' {
			s := c.src[start:c.pos]
			c.pos++
			if !isASCII(s) && !utf8.Valid(s) {
				return nil, c.errorf("invalid UTF-8 in string")
			}
			return s, nil
		}
		if b == '\\' || b < 0x20 {
			break
		}
		c.pos++
	}
	buf := make([]byte, 0, c.pos-start+16)
	buf = append(buf, c.src[start:c.pos]...)
	for c.pos < len(c.src) {
		b := c.src[c.pos]
		switch {
		case b == '"':
			c.pos++
			if !utf8.Valid(buf) {
				return nil, c.errorf("invalid UTF-8 in string")
			}
			return buf, nil
		case b < 0x20:
			return nil, c.errorf("control character in string")
		case b != '\\':
			buf = append(buf, b)
			c.pos++
			continue
		}
		// escape
		if c.pos+1 >= len(c.src) {
			return nil, c.errorf("unterminated escape")
		}
		e := c.src[c.pos+1]
		c.pos += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := c.hex4()
			if err != nil {
				return nil, err
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate must be followed by an escaped low one;
				// a lone surrogate cannot be represented and becomes U+FFFD,
				// the same replacement every JSON decoder of Go makes.
				if r < 0xDC00 && c.pos+1 < len(c.src) && c.src[c.pos] == '\\' && c.src[c.pos+1] == 'u' {
					save := c.pos
					c.pos += 2
					r2, err := c.hex4()
					if err != nil {
						return nil, err
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
					} else {
						c.pos = save
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, c.errorf("invalid escape \\%c", e)
		}
	}
	return nil, c.errorf("unterminated string")
}

func (c *canon) hex4() (rune, error) {
	if c.pos+4 > len(c.src) {
		return 0, c.errorf("short \\u escape")
	}
	var r rune
	for _, h := range c.src[c.pos : c.pos+4] {
		r <<= 4
		switch {
		case h >= '0' && h <= '9':
			r |= rune(h - '0')
		case h >= 'a' && h <= 'f':
			r |= rune(h - 'a' + 10)
		case h >= 'A' && h <= 'F':
			r |= rune(h - 'A' + 10)
		default:
			return 0, c.errorf("invalid hex digit in \\u escape")
		}
	}
	c.pos += 4
	return r, nil
}

const hexDigits = "0123456789abcdef"

func isASCII(s []byte) bool {
	for _, b := range s {
		if b >= 0x80 {
			return false
		}
	}
	return true
}

// appendJCSString writes s as a JSON string with the escapes of RFC 8785
// section 3.2.2.2: only the quote, the backslash and control characters are
// escaped, with the short forms where JSON has them.
func appendJCSString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// number parses a JSON number and writes it in the ECMAScript form RFC 8785
// section 3.2.2.3 prescribes.
func (c *canon) number(dst []byte) ([]byte, error) {
	start := c.pos
	if c.src[c.pos] == '-' {
		c.pos++
	}
	intStart := c.pos
	for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
		c.pos++
	}
	if c.pos == intStart {
		return dst, c.errorf("invalid number")
	}
	if c.src[intStart] == '0' && c.pos-intStart > 1 {
		return dst, c.errorf("number with a leading zero")
	}
	simple := true
	if c.pos < len(c.src) && c.src[c.pos] == '.' {
		simple = false
		c.pos++
		fs := c.pos
		for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
			c.pos++
		}
		if c.pos == fs {
			return dst, c.errorf("invalid number fraction")
		}
	}
	if c.pos < len(c.src) && (c.src[c.pos] == 'e' || c.src[c.pos] == 'E') {
		simple = false
		c.pos++
		if c.pos < len(c.src) && (c.src[c.pos] == '+' || c.src[c.pos] == '-') {
			c.pos++
		}
		es := c.pos
		for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
			c.pos++
		}
		if c.pos == es {
			return dst, c.errorf("invalid number exponent")
		}
	}
	lit := c.src[start:c.pos]
	// Fast path: integers of up to 15 digits are exact doubles whose
	// ECMAScript form is the literal itself ("-0" aside).
	if simple && c.pos-intStart <= 15 {
		if string(lit) == "-0" {
			return append(dst, '0'), nil
		}
		return append(dst, lit...), nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		// ParseFloat returns ±Inf with a range error for huge literals;
		// JCS cannot represent them.
		return dst, c.errorf("number %s out of range", lit)
	}
	return AppendECMANumber(dst, f)
}

// AppendECMANumber appends f formatted as ECMAScript's Number.prototype.toString
// does (the form RFC 8785 requires). NaN and infinities are an error.
func AppendECMANumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("%w: %v cannot be represented", ErrInvalidJSON, f)
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // d.ddde±XX
	epos := 0
	for i, b := range e {
		if b == 'e' {
			epos = i
			break
		}
	}
	var digits [24]byte
	nd := 0
	for _, b := range e[:epos] {
		if b != '.' {
			digits[nd] = b
			nd++
		}
	}
	exp, _ := strconv.Atoi(string(e[epos+1:]))
	n := exp + 1 // ECMAScript's n: the position of the decimal point
	k := nd
	d := digits[:nd]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for i := 0; i < n-k; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for i := 0; i < -n; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		} else {
			dst = append(dst, '-')
		}
		x := n - 1
		if x < 0 {
			x = -x
		}
		dst = strconv.AppendInt(dst, int64(x), 10)
	}
	return dst, nil
}
