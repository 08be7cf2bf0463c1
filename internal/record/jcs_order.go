package record

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

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
