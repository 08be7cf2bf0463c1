package ocsfrec

import "github.com/svcexport/collector/internal/ocsf/ocsfjson"

// maxFields bounds the known members of one source (bit masks are uint32).
const maxFields = 32

// member is one top-level member of a record in the order sent; field is
// the index of the known field it is, or -1.
type member struct {
	name, value []byte
	field       int
}

// Record is one record split into its top-level members, with the state
// of its mapping: which known members an attribute holds in full (Mapped)
// and which could not be converted (Fallback). The zero value is ready for
// Scan; one mapping uses it at a time (package ocsf pools them).
type Record struct {
	object    bool
	raw       []byte            // the record
	f         [maxFields][]byte // value of each known member present
	order     []member          // every member, in the order sent
	buf       [24]member        // backing of order for ordinary records
	done      uint32            // known members an attribute holds in full
	failed    uint32            // known members that could not be converted
	fallbacks int               // conversions that failed, repeats
	x         [10][]byte        // values a source's head found for its body
	scratch   [256]byte         // backing of decoded strings
	spare     []byte            // what is left of scratch
}

// Scan validates raw (ocsfjson.Value) and splits it into members, the
// known ones found by name in index (member name -> field index, at most
// 32 fields), resetting the state of the previous record. A member that
// is repeated is no field: every occurrence goes to unmapped, counted
// once.
func (r *Record) Scan(index map[string]int, raw []byte) error {
	v, err := ocsfjson.Value(raw)
	if err != nil {
		return err
	}
	clear(r.f[:])
	clear(r.x[:])
	r.object, r.done, r.failed, r.fallbacks = false, 0, 0, 0
	r.raw = v
	r.order = r.buf[:0]
	r.spare = r.scratch[:0]
	it, ok := ocsfjson.ObjectMembers(r.raw)
	if !ok {
		return nil
	}
	r.object = true
	for {
		name, value, ok := it.Next()
		if !ok {
			break
		}
		idx, known := index[string(r.Text(name))]
		switch {
		case !known:
			idx = -1
		case r.f[idx] != nil:
			// A repeated member is no field: every occurrence goes to
			// unmapped, counted once.
			r.Fallback(idx)
		default:
			r.f[idx] = value
		}
		r.order = append(r.order, member{name: name, value: value, field: idx})
	}
	for i := range r.f {
		if r.failed&(1<<i) != 0 {
			r.f[i] = nil
		}
	}
	return nil
}

// Text returns the content of the string token tok: a subslice of tok
// when it holds no escape, else decoded into the scratch space.
func (r *Record) Text(tok []byte) []byte {
	c := tok[1 : len(tok)-1]
	for _, b := range c {
		if b == '\\' {
			start := len(r.spare)
			r.spare = ocsfjson.AppendUnquoted(r.spare, tok)
			return r.spare[start:len(r.spare):len(r.spare)]
		}
	}
	return c
}

// Field returns the value of known field i as sent, or nil when the
// record lacks it or repeats it.
func (r *Record) Field(i int) []byte { return r.f[i] }

// Parts returns the slots where a source's first step keeps values it
// found inside members for its second step; Scan clears them.
func (r *Record) Parts() *[10][]byte { return &r.x }

// Mapped records that an attribute holds known field i in full.
func (r *Record) Mapped(i int) { r.done |= 1 << i }

// Fallback records that known field i (or a part of it) could not be
// converted: the member goes to unmapped, counted once.
func (r *Record) Fallback(i int) {
	if r.failed&(1<<i) == 0 {
		r.failed |= 1 << i
		r.fallbacks++
	}
}

// CountFallback counts a fallback that is no known field's: the record
// itself, when it is not an object and goes to unmapped whole.
func (r *Record) CountFallback() { r.fallbacks++ }

// Fallbacks returns the number of fallbacks counted since Scan.
func (r *Record) Fallbacks() int { return r.fallbacks }

// Object reports whether the record is a JSON object (only an object has
// members).
func (r *Record) Object() bool { return r.object }

// Raw returns the record, without the space around it.
func (r *Record) Raw() []byte { return r.raw }

// Len returns the number of top-level members, repeats included.
func (r *Record) Len() int { return len(r.order) }

// Member returns member i in the order sent: its name (the token as sent),
// its value, and whether it goes to unmapped: unknown, repeated, not
// converted, or known but held by no attribute in full. A known member
// that is null carries nothing and is left out.
func (r *Record) Member(i int) (name, value []byte, unmapped bool) {
	mb := &r.order[i]
	return mb.name, mb.value, r.isUnmapped(mb)
}

// isUnmapped reports whether member mb goes to unmapped.
func (r *Record) isUnmapped(mb *member) bool {
	if mb.field < 0 {
		return true
	}
	bit := uint32(1) << mb.field
	if r.failed&bit != 0 {
		return true
	}
	return r.done&bit == 0 && !ocsfjson.IsNull(mb.value)
}

// HasMember reports whether the record has a top-level member called name.
func (r *Record) HasMember(name string) bool {
	for i := range r.order {
		if string(r.Text(r.order[i].name)) == name {
			return true
		}
	}
	return false
}
