package ocsfrec

import (
	"strconv"

	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
)

// Conversions of known field i, or of a value found inside it (the In
// forms): each returns false for an absent or null value, and counts a
// fallback for field i when a value is present but cannot become the
// attribute's type.

// Str returns field i as a string_t token.
func (r *Record) Str(i int) ([]byte, bool) { return r.StrIn(i, r.f[i]) }

// Integer returns field i as an integer (a number or a numeric string).
func (r *Record) Integer(i int) (int64, bool) { return r.IntIn(i, r.f[i]) }

// Time returns field i as a time (timestamp_t, Unix milliseconds).
func (r *Record) Time(i int) (int64, bool) { return r.TimeIn(i, r.f[i]) }

// ID returns field i as an identifier.
func (r *Record) ID(i int) Ident { return r.IDIn(i, r.f[i]) }

// Ident is an identifier a record holds: a string token, or an integer
// that OCSF's string_t uid attributes carry as a decimal string.
type Ident struct {
	Tok []byte // the string token as sent, or nil for an integer
	N   int64  // the integer, when Tok is nil
	OK  bool   // the record holds an identifier
}

// IDIn reads v, a value inside field i, as an identifier; null or absent
// is no identifier and no fallback.
func (r *Record) IDIn(i int, v []byte) Ident {
	if ocsfjson.IsNull(v) {
		return Ident{}
	}
	if ocsfjson.IsString(v) && len(v) > 2 && len(v) <= maxString+2 {
		return Ident{Tok: v, OK: true}
	}
	if n, ok := ocsfjson.ParseInt(v); ok && !ocsfjson.IsString(v) {
		return Ident{N: n, OK: true}
	}
	r.Fallback(i)
	return Ident{}
}

// WriteID writes v under name as a string_t: the token as sent, or the
// integer as a decimal string.
func WriteID(w *ocsfjson.Writer, name string, v Ident) {
	if v.Tok != nil {
		w.Token(name, v.Tok)
	} else {
		w.IntString(name, v.N)
	}
}

// StrIn reads v as a string_t token.
func (r *Record) StrIn(i int, v []byte) ([]byte, bool) {
	if ocsfjson.IsNull(v) {
		return nil, false
	}
	if !ocsfjson.IsString(v) || (len(v) > maxString+2 && len(r.Text(v)) > maxString) {
		r.Fallback(i)
		return nil, false
	}
	return v, true
}

// IPIn reads v as an ip_t token and returns its IP version.
func (r *Record) IPIn(i int, v []byte) ([]byte, int) {
	tok, ok := r.StrIn(i, v)
	if !ok {
		return nil, 0
	}
	ver := IPVersion(r.Text(tok))
	if ver == 0 {
		r.Fallback(i)
		return nil, 0
	}
	return tok, ver
}

// IntIn reads v as an integer (long_t).
func (r *Record) IntIn(i int, v []byte) (int64, bool) {
	if ocsfjson.IsNull(v) {
		return 0, false
	}
	n, ok := ocsfjson.ParseInt(v)
	if !ok {
		r.Fallback(i)
	}
	return n, ok
}

// Int32In reads v as an integer_t that 32-bit consumers can store.
func (r *Record) Int32In(i int, v []byte) (int64, bool) {
	n, ok := r.IntIn(i, v)
	if ok && !fitsInt32(n) {
		r.Fallback(i)
		return 0, false
	}
	return n, ok
}

// TimeIn reads v as a time (timestamp_t, Unix milliseconds).
func (r *Record) TimeIn(i int, v []byte) (int64, bool) {
	if ocsfjson.IsNull(v) {
		return 0, false
	}
	ms, ok := TimeMs(v)
	if !ok {
		r.Fallback(i)
	}
	return ms, ok
}

// HostnameIn reads v as a string and reports whether it is also a valid
// hostname_t.
func (r *Record) HostnameIn(i int, v []byte) (tok []byte, isString, valid bool) {
	tok, ok := r.StrIn(i, v)
	if !ok {
		return nil, false, false
	}
	return tok, true, validHostname(r.Text(tok))
}

// Lookup finds the members called names in the object raw and stores
// their values in vals (nil for absent ones). It returns the number of
// other members (and repeats) and false when raw is not an object.
func (r *Record) Lookup(raw []byte, names []string, vals [][]byte) (extra int, ok bool) {
	return r.find(raw, names, vals, true)
}

// Pick is Lookup for a caller that needs no count of the other members:
// it stops when it has found every name. It returns false when raw is
// not an object.
func (r *Record) Pick(raw []byte, names []string, vals [][]byte) bool {
	_, ok := r.find(raw, names, vals, false)
	return ok
}

func (r *Record) find(raw []byte, names []string, vals [][]byte, all bool) (extra int, ok bool) {
	it, ok := ocsfjson.ObjectMembers(raw)
	if !ok {
		return 0, false
	}
	missing := len(names)
	for {
		name, value, more := it.Next()
		if !more {
			return extra, true
		}
		n := r.Text(name)
		found := false
		for k, want := range names {
			if string(n) == want {
				if vals[k] != nil {
					extra++ // a repeat: the whole member stays unmapped
				} else {
					vals[k] = value
					missing--
				}
				found = true
				break
			}
		}
		if !found {
			extra++
		}
		if missing == 0 && !all {
			return extra, true
		}
	}
}

// EqualFold reports whether the string token tok's content equals s,
// ASCII letters compared without case.
func (r *Record) EqualFold(tok []byte, s string) bool {
	t := r.Text(tok)
	return len(t) == len(s) && prefixFold(t, s)
}

// HasPrefixFold is EqualFold for a prefix.
func (r *Record) HasPrefixFold(tok []byte, prefix string) bool {
	t := r.Text(tok)
	return len(t) >= len(prefix) && prefixFold(t, prefix)
}

// prefixFold reports whether t starts with prefix (len(t) >= len(prefix)),
// ASCII letters compared without case.
func prefixFold(t []byte, prefix string) bool {
	for k := range len(prefix) {
		a, b := t[k], prefix[k]
		if a >= 'a' && a <= 'z' {
			a -= 'a' - 'A'
		}
		if b >= 'a' && b <= 'z' {
			b -= 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// QuotedInt appends n as a JSON string to the scratch space and returns
// the token.
func (r *Record) QuotedInt(n int64) []byte {
	start := len(r.spare)
	r.spare = append(r.spare, '"')
	r.spare = strconv.AppendInt(r.spare, n, 10)
	r.spare = append(r.spare, '"')
	return r.spare[start:len(r.spare):len(r.spare)]
}

// LowerText appends the content of the string token tok, ASCII letters in
// lower case, to the scratch space and returns it. A token with escapes is
// decoded first ("T\u0043P" gives "tcp").
func (r *Record) LowerText(tok []byte) []byte {
	text := r.Text(tok)
	start := len(r.spare)
	for _, c := range text {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		r.spare = append(r.spare, c)
	}
	return r.spare[start:len(r.spare):len(r.spare)]
}
