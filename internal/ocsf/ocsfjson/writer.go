package ocsfjson

import (
	"encoding/base64"
	"strconv"
)

// Writer appends one JSON object to a byte slice, member by member, and
// keeps track of the commas: after an object or array closes, its
// enclosing one has a member, so one flag is enough. The zero value
// writes to a new slice; NewWriter appends to one.
type Writer struct {
	b     []byte
	comma bool // the next member of the open object or array needs a comma
}

// NewWriter returns a Writer that appends to dst.
func NewWriter(dst []byte) Writer { return Writer{b: dst} }

// Bytes returns the slice written to: dst extended by what was written.
func (e *Writer) Bytes() []byte { return e.b }

// Key writes the separator and the name of the next member; name is a
// constant that needs no escaping. The member's value follows with the
// Append methods.
func (e *Writer) Key(name string) {
	if e.comma {
		e.b = append(e.b, ',')
	}
	e.comma = true
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

// Open starts a member holding an object; name "" starts the top level or
// an array element.
func (e *Writer) Open(name string) {
	if name != "" {
		e.Key(name)
	} else if e.comma {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '{')
	e.comma = false
}

// Close ends the innermost open object.
func (e *Writer) Close() {
	e.b = append(e.b, '}')
	e.comma = true
}

// OpenArray starts a member holding an array; close it with CloseArray.
func (e *Writer) OpenArray(name string) {
	e.Key(name)
	e.b = append(e.b, '[')
	e.comma = false
}

// CloseArray ends the innermost open array.
func (e *Writer) CloseArray() {
	e.b = append(e.b, ']')
	e.comma = true
}

// Int writes an integer.
func (e *Writer) Int(name string, v int64) {
	e.Key(name)
	e.b = strconv.AppendInt(e.b, v, 10)
}

// Str writes a string that may need escaping.
func (e *Writer) Str(name string, v string) {
	e.Key(name)
	e.b = appendString(e.b, v)
}

// StrBytes writes decoded string content that may need escaping.
func (e *Writer) StrBytes(name string, v []byte) {
	e.Key(name)
	e.b = appendString(e.b, v)
}

// Token writes a string token as it was sent (quotes and escapes
// included): valid JSON, so it is copied.
func (e *Writer) Token(name string, raw []byte) {
	e.Key(name)
	e.b = append(e.b, raw...)
}

// Raw writes a validated JSON value as sent, on one line.
func (e *Writer) Raw(name string, raw []byte) {
	e.Key(name)
	e.b = appendOneLine(e.b, raw)
}

// RawMember writes a member whose name is a token as sent and whose value
// is a validated JSON value, on one line.
func (e *Writer) RawMember(name, value []byte) {
	if e.comma {
		e.b = append(e.b, ',')
	}
	e.comma = true
	e.b = append(e.b, name...)
	e.b = append(e.b, ':')
	e.b = appendOneLine(e.b, value)
}

// IntString writes an integer as a JSON string (OCSF uid attributes are
// string_t).
func (e *Writer) IntString(name string, v int64) {
	e.Key(name)
	e.b = append(e.b, '"')
	e.b = strconv.AppendInt(e.b, v, 10)
	e.b = append(e.b, '"')
}

// AppendByte appends c as is: a part of a value the caller writes piece
// by piece after Key.
func (e *Writer) AppendByte(c byte) { e.b = append(e.b, c) }

// AppendRaw appends raw as is: valid JSON on one line (a token as sent, an
// object written before), or a part of a value the caller writes piece by
// piece after Key.
func (e *Writer) AppendRaw(raw []byte) { e.b = append(e.b, raw...) }

// AppendRawString is AppendRaw for a string.
func (e *Writer) AppendRawString(raw string) { e.b = append(e.b, raw...) }

// AppendString appends s as a JSON string, escaped (the value of a member
// after Key).
func (e *Writer) AppendString(s string) { e.b = appendString(e.b, s) }

// AppendStringBytes is AppendString for decoded content.
func (e *Writer) AppendStringBytes(s []byte) { e.b = appendString(e.b, s) }

// AppendBase64 appends b in standard base64 as a JSON string (the value of
// a member after Key).
func (e *Writer) AppendBase64(b []byte) {
	e.b = append(e.b, '"')
	e.b = base64.StdEncoding.AppendEncode(e.b, b)
	e.b = append(e.b, '"')
}
