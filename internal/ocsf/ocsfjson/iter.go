package ocsfjson

// Members iterates over the members of a JSON object that Value has
// already validated. The zero value iterates over nothing.
type Members struct {
	b []byte
	i int
}

// ObjectMembers returns an iterator over the members of raw, a validated
// value, or false when raw is not an object.
func ObjectMembers(raw []byte) (Members, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return Members{}, false
	}
	return Members{b: raw, i: 1}, true
}

// Next returns the next member's name (the quoted token as sent) and value
// (the raw token, without surrounding space), or false after the last.
func (m *Members) Next() (name, value []byte, ok bool) {
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

// Elements iterates over the elements of a validated JSON array. The zero
// value iterates over nothing.
type Elements struct {
	b []byte
	i int
}

// ArrayElements returns an iterator over the elements of raw, a validated
// value, or false when raw is not an array.
func ArrayElements(raw []byte) (Elements, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return Elements{}, false
	}
	return Elements{b: raw, i: 1}, true
}

// Next returns the next element (the raw token, without surrounding
// space), or false after the last.
func (e *Elements) Next() ([]byte, bool) {
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

// IsString reports whether raw is a JSON string token.
func IsString(raw []byte) bool { return len(raw) >= 2 && raw[0] == '"' }

// IsNull reports whether raw is absent or the JSON null.
func IsNull(raw []byte) bool { return raw == nil || string(raw) == "null" }
