package record

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrInvalidJSON is wrapped by every canonicalization error: the input is not
// one well-formed JSON value.
var ErrInvalidJSON = errors.New("invalid JSON")

// maxDepth bounds the nesting of arrays and objects the canonicalizer accepts,
// so a hostile body cannot exhaust the stack.
const maxDepth = 256

// AppendCanonical appends the canonical form of the JSON value in src to dst
// and returns the extended buffer: RFC 8785 (JCS) for every ordinary value,
// with the three deviations that keep it injective (see the package
// documentation): a number whose value float64 cannot carry keeps its exact
// value, a lone surrogate escape stays an escape, and a repeated member name
// keeps all its members. Object members are sorted by the UTF-16 code units
// of their names, strings are written with the minimal JCS escapes, numbers
// in the ECMAScript shortest form, and insignificant whitespace is removed.
// Bytes of invalid UTF-8 inside strings are copied as they are, so the
// result is then not valid UTF-8. Input that is not one JSON value
// (trailing non-space bytes included) is an error wrapping ErrInvalidJSON.
func AppendCanonical(dst, src []byte) ([]byte, error) {
	var c canon
	out, _, err := c.run(dst, src, "")
	return out, err
}

// AppendCanonicalField is AppendCanonical that also returns the raw bytes (a
// subslice of src) of the top-level member named field, or nil when the value
// is not an object or has no such member; of a repeated member, the last. The
// collector finds a record's time this way without decoding the record twice.
func AppendCanonicalField(dst, src []byte, field string) (out, fieldRaw []byte, err error) {
	var c canon
	return c.run(dst, src, field)
}

// Canonical returns the canonical form of the JSON value in src (see
// AppendCanonical).
func Canonical(src []byte) ([]byte, error) {
	return AppendCanonical(make([]byte, 0, len(src)), src)
}

// run canonicalizes src onto dst, reusing c's working buffers. Afterwards
// c.invalidUTF8 tells whether a string of src held invalid UTF-8.
func (c *canon) run(dst, src []byte, field string) (out, fieldRaw []byte, err error) {
	c.src, c.pos, c.field, c.fieldRaw, c.invalidUTF8 = src, 0, field, nil, false
	c.members = c.members[:0]
	c.keys = c.keys[:0]
	out, err = c.value(dst, 0)
	if err == nil {
		c.skipSpace()
		if c.pos != len(c.src) {
			err = c.errorf("unexpected data after the value")
		}
	}
	fieldRaw = c.fieldRaw
	// Drop the references into src so a reused canon does not keep the
	// last page alive.
	c.src, c.fieldRaw = nil, nil
	clear(c.members[:cap(c.members)])
	if err != nil {
		return dst, nil, err
	}
	return out, fieldRaw, nil
}

// canon is a canonicalizer whose buffers are reused from one record to the
// next. The zero value is ready to use.
type canon struct {
	src []byte
	pos int
	// members holds member boundaries while an object is sorted; it is
	// reused by nested objects through a stack discipline (see object).
	members []member
	// scratch holds an object's unsorted members while they are rewritten.
	scratch []byte
	// keys holds the decoded names of members written with escapes; a
	// member's key points into it (an older backing array stays valid when
	// it grows, since written bytes are never changed).
	keys []byte
	// digits holds a number literal's significant digits.
	digits []byte
	// field, when set, names a member of the top-level object whose raw
	// value is captured in fieldRaw on the way.
	field    string
	fieldRaw []byte
	// invalidUTF8 records that a string held bytes that are not UTF-8.
	invalidUTF8 bool
}

type member struct {
	key []byte // decoded name, for sorting
	// name is the canonical "name" text in the output; it orders two names
	// whose keys compare equal only because one is odd.
	name []byte
	// odd marks a name holding invalid UTF-8 or a lone surrogate (stored
	// as its three-byte generalized UTF-8 form in key).
	odd        bool
	start, end int // canonical "name":value in the output buffer
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
		out, _, _, err := c.str(dst, false)
		return out, err
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
	// Members are written to dst in input order first, with their commas,
	// and rearranged in sorted order only if they were not sorted already.
	base := len(dst)
	dst = append(dst, '{')
	mark := len(c.members)
	for {
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return dst, c.errorf("expected a member name")
		}
		if len(c.members) > mark {
			dst = append(dst, ',')
		}
		start := len(dst)
		var key []byte
		var odd bool
		var err error
		if dst, key, odd, err = c.str(dst, true); err != nil {
			return dst, err
		}
		name := dst[start:len(dst):len(dst)]
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
		c.members = append(c.members, member{key: key, name: name, odd: odd, start: start, end: len(dst)})
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
	if !slices.IsSortedFunc(ms, compareMembers) {
		// A stable sort keeps repeated names in input order: every member
		// is kept, so {"x":1,"x":2} and {"x":2} stay apart (no "last value
		// wins" as in ECMAScript's JSON.parse).
		slices.SortStableFunc(ms, compareMembers)
		c.scratch = append(c.scratch[:0], dst[base:]...)
		dst = append(dst[:base], '{')
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, c.scratch[m.start-base:m.end-base]...)
		}
	}
	dst = append(dst, '}')
	c.members = c.members[:mark]
	return dst, nil
}

// compareMembers orders object members by the UTF-16 code units of their
// names (RFC 8785 section 3.2.3). Odd names (invalid UTF-8, lone
// surrogates) are compared as sequences of units too (see nextUnit), and two
// names with equal units but different canonical text by that text, so the
// order is total and never depends on the input order, except among
// members of one name, which a stable sort keeps in input order.
func compareMembers(a, b member) int {
	if !a.odd && !b.odd {
		return compareUTF16(a.key, b.key)
	}
	if r := compareUnits(a.key, b.key); r != 0 {
		return r
	}
	return bytes.Compare(a.name, b.name)
}

// compareUTF16 orders valid UTF-8 strings by their UTF-16 code units, as RFC
// 8785 section 3.2.3 requires. For strings without characters above U+FFFF
// this is the same as byte order, which is the fast path.
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
		// A byte from 0xF0 starts a character above U+FFFF, so both
		// strings are at a character boundary here.
		return compareUnits(a[i:], b[i:])
	}
	return len(a) - len(b)
}

// compareUnits compares a and b unit by unit (see nextUnit).
func compareUnits(a, b []byte) int {
	var ua, ub unitReader
	ua.s, ub.s = a, b
	for {
		x, okA := ua.next()
		y, okB := ub.next()
		switch {
		case !okA && !okB:
			return 0
		case !okA:
			return -1
		case !okB:
			return 1
		case x != y:
			if x < y {
				return -1
			}
			return 1
		}
	}
}

// unitReader yields the units of a decoded name: the UTF-16 code units of
// its valid characters, the code unit of a lone surrogate (kept in the
// generalized UTF-8 form ED A0..BF 80..BF), and 0x10000 plus the byte for
// any other byte that is not UTF-8. For valid UTF-8 this is exactly the
// UTF-16 code unit sequence.
type unitReader struct {
	s       []byte
	pending rune // low surrogate still to yield, or 0
}

func (u *unitReader) next() (rune, bool) {
	if u.pending != 0 {
		r := u.pending
		u.pending = 0
		return r, true
	}
	if len(u.s) == 0 {
		return 0, false
	}
	if b := u.s[0]; b < utf8.RuneSelf {
		u.s = u.s[1:]
		return rune(b), true
	}
	r, size := utf8.DecodeRune(u.s)
	switch {
	case r != utf8.RuneError || size > 1:
		u.s = u.s[size:]
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			u.pending = lo
			return hi, true
		}
		return r, true
	case len(u.s) >= 3 && u.s[0] == 0xED && u.s[1]&0xE0 == 0xA0 && u.s[2]&0xC0 == 0x80:
		r = rune(u.s[1]&0x3F)<<6 | rune(u.s[2]&0x3F) | 0xD000
		u.s = u.s[3:]
		return r, true
	default:
		b := u.s[0]
		u.s = u.s[1:]
		return 0x10000 + rune(b), true
	}
}

// str writes the canonical form of the string at c.pos to dst and leaves
// c.pos after its closing quote. With wantKey it also returns the decoded
// string for sorting (a sub-slice of the input when the string has no
// escapes, else of c.keys; callers must not modify it) and whether it is
// odd: holding invalid UTF-8 or a lone surrogate.
//
// The output is the JCS form of the decoded string, written on the fly:
// the quote, the backslash and control characters are escaped, with the
// short forms where JSON has them; every other character is written as
// UTF-8. Two deviations keep distinct inputs apart: a lone surrogate escape
// is written as itself (\ud800, lowercase hex), which no valid string can
// produce since a real backslash is always written \\; and bytes that are
// not UTF-8 are copied as they are, which no valid string can produce
// either.
func (c *canon) str(dst []byte, wantKey bool) (out, key []byte, odd bool, err error) {
	c.pos++ // opening quote
	start := c.pos
	// Fast path: no escapes, no control characters.
	for c.pos < len(c.src) {
		b := c.src[c.pos]
		if b == '"' {
			s := c.src[start:c.pos]
			c.pos++
			if !utf8.Valid(s) {
				c.invalidUTF8, odd = true, true
			}
			dst = append(dst, '"')
			dst = append(dst, s...)
			return append(dst, '"'), s, odd, nil
		}
		if b == '\\' || b < 0x20 {
			break
		}
		c.pos++
	}
	dst = append(dst, '"')
	keyStart := len(c.keys)
	run := start // start of the bytes not yet copied
	for {
		for c.pos < len(c.src) {
			if b := c.src[c.pos]; b == '"' || b == '\\' || b < 0x20 {
				break
			}
			c.pos++
		}
		if c.pos >= len(c.src) {
			return dst, nil, false, c.errorf("unterminated string")
		}
		// Raw bytes hold whole characters: an escape never continues one.
		seg := c.src[run:c.pos]
		if !utf8.Valid(seg) {
			c.invalidUTF8, odd = true, true
		}
		dst = append(dst, seg...)
		if wantKey {
			c.keys = append(c.keys, seg...)
		}
		b := c.src[c.pos]
		if b == '"' {
			c.pos++
			if wantKey {
				key = c.keys[keyStart:len(c.keys):len(c.keys)]
			}
			return append(dst, '"'), key, odd, nil
		}
		if b < 0x20 {
			return dst, nil, false, c.errorf("control character in string")
		}
		// escape
		if c.pos+1 >= len(c.src) {
			return dst, nil, false, c.errorf("unterminated escape")
		}
		e := c.src[c.pos+1]
		c.pos += 2
		var r rune
		switch e {
		case '"', '\\', '/':
			r = rune(e)
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			if r, err = c.hex4(); err != nil {
				return dst, nil, false, err
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by an escaped low one is one
				// character; anything else is a lone surrogate.
				paired := false
				if r < 0xDC00 && c.pos+1 < len(c.src) && c.src[c.pos] == '\\' && c.src[c.pos+1] == 'u' {
					save := c.pos
					c.pos += 2
					r2, err := c.hex4()
					if err != nil {
						return dst, nil, false, err
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r, paired = d, true
					} else {
						c.pos = save
					}
				}
				if !paired {
					odd = true
					dst = append(dst, '\\', 'u', hexDigits[r>>12], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
					if wantKey {
						c.keys = append(c.keys, 0xE0|byte(r>>12), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
					}
					run = c.pos
					continue
				}
			}
		default:
			return dst, nil, false, c.errorf("invalid escape \\%c", e)
		}
		dst = appendJCSRune(dst, r)
		if wantKey {
			c.keys = utf8.AppendRune(c.keys, r)
		}
		run = c.pos
	}
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

// appendJCSRune writes the character r (not a surrogate) as RFC 8785
// section 3.2.2.2 writes it inside a string.
func appendJCSRune(dst []byte, r rune) []byte {
	switch {
	case r >= 0x20 && r != '"' && r != '\\':
		if r < utf8.RuneSelf {
			return append(dst, byte(r))
		}
		return utf8.AppendRune(dst, r)
	case r == '"':
		return append(dst, '\\', '"')
	case r == '\\':
		return append(dst, '\\', '\\')
	case r == '\b':
		return append(dst, '\\', 'b')
	case r == '\f':
		return append(dst, '\\', 'f')
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	default:
		return append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
	}
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
		dst = appendJCSRune(dst, rune(b))
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
