package record

import (
	"errors"
	"fmt"
	"slices"
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
