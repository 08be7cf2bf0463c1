package ocsf

import "strconv"

// enc appends one JSON object to b, member by member, and keeps track of
// the commas: after an object or array closes, its enclosing one has a
// member, so one flag is enough.
type enc struct {
	b     []byte
	comma bool // the next member of the open object or array needs a comma
}

// key writes the separator and the name of the next member; name is a
// constant that needs no escaping.
func (e *enc) key(name string) {
	if e.comma {
		e.b = append(e.b, ',')
	}
	e.comma = true
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

// open starts a member holding an object; name "" starts the top level or
// an array element.
func (e *enc) open(name string) {
	if name != "" {
		e.key(name)
	} else if e.comma {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '{')
	e.comma = false
}

// close ends the innermost open object.
func (e *enc) close() {
	e.b = append(e.b, '}')
	e.comma = true
}

// openArray starts a member holding an array; close it with closeArray.
func (e *enc) openArray(name string) {
	e.key(name)
	e.b = append(e.b, '[')
	e.comma = false
}

func (e *enc) closeArray() {
	e.b = append(e.b, ']')
	e.comma = true
}

func (e *enc) int(name string, v int64) {
	e.key(name)
	e.b = strconv.AppendInt(e.b, v, 10)
}

func (e *enc) bool(name string, v bool) {
	e.key(name)
	e.b = strconv.AppendBool(e.b, v)
}

// str writes a string that may need escaping.
func (e *enc) str(name string, v string) {
	e.key(name)
	e.b = appendString(e.b, v)
}

// strBytes writes decoded string content that may need escaping.
func (e *enc) strBytes(name string, v []byte) {
	e.key(name)
	e.b = appendString(e.b, v)
}

// token writes a string token as it was sent (quotes and escapes
// included): valid JSON, so it is copied.
func (e *enc) token(name string, raw []byte) {
	e.key(name)
	e.b = append(e.b, raw...)
}

// raw writes a JSON value as sent, on one line.
func (e *enc) raw(name string, raw []byte) {
	e.key(name)
	e.b = appendOneLine(e.b, raw)
}

// rawMember writes a member whose name is a token as sent.
func (e *enc) rawMember(name, value []byte) {
	if e.comma {
		e.b = append(e.b, ',')
	}
	e.comma = true
	e.b = append(e.b, name...)
	e.b = append(e.b, ':')
	e.b = appendOneLine(e.b, value)
}

// intString writes an integer as a JSON string (OCSF uid attributes are
// string_t).
func (e *enc) intString(name string, v int64) {
	e.key(name)
	e.b = append(e.b, '"')
	e.b = strconv.AppendInt(e.b, v, 10)
	e.b = append(e.b, '"')
}
