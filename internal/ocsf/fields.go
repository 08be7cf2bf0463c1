package ocsf

// Conversions of values found inside known field i (the field itself or a
// part of it): each returns false for an absent or null value, and counts
// a fallback for field i when a value is present but cannot become the
// attribute's type.

// strIn reads v as a string_t token.
func (r *rec) strIn(i int, v []byte) ([]byte, bool) {
	if isNull(v) {
		return nil, false
	}
	if !isString(v) || (len(v) > maxString+2 && len(r.text(v)) > maxString) {
		r.fallback(i)
		return nil, false
	}
	return v, true
}

// ipIn reads v as an ip_t token and returns its IP version.
func (r *rec) ipIn(i int, v []byte) ([]byte, int) {
	tok, ok := r.strIn(i, v)
	if !ok {
		return nil, 0
	}
	ver := ipVersion(r.text(tok))
	if ver == 0 {
		r.fallback(i)
		return nil, 0
	}
	return tok, ver
}

// intIn reads v as an integer (long_t).
func (r *rec) intIn(i int, v []byte) (int64, bool) {
	if isNull(v) {
		return 0, false
	}
	n, ok := parseInt(v)
	if !ok {
		r.fallback(i)
	}
	return n, ok
}

// int32In reads v as an integer_t that 32-bit consumers can store.
func (r *rec) int32In(i int, v []byte) (int64, bool) {
	n, ok := r.intIn(i, v)
	if ok && !fitsInt32(n) {
		r.fallback(i)
		return 0, false
	}
	return n, ok
}

// timeIn reads v as a time (timestamp_t, Unix milliseconds).
func (r *rec) timeIn(i int, v []byte) (int64, bool) {
	if isNull(v) {
		return 0, false
	}
	ms, ok := timeMs(v)
	if !ok {
		r.fallback(i)
	}
	return ms, ok
}

// hostnameIn reads v as a string and reports whether it is also a valid
// hostname_t.
func (r *rec) hostnameIn(i int, v []byte) ([]byte, bool, bool) {
	tok, ok := r.strIn(i, v)
	if !ok {
		return nil, false, false
	}
	return tok, true, validHostname(r.text(tok))
}

// lookup finds the members called names in the object raw and stores
// their values in vals (nil for absent ones). It returns the number of
// other members (and repeats) and false when raw is not an object.
func (r *rec) lookup(raw []byte, names []string, vals [][]byte) (extra int, ok bool) {
	return r.find(raw, names, vals, true)
}

// pick is lookup for a caller that needs no count of the other members:
// it stops when it has found every name.
func (r *rec) pick(raw []byte, names []string, vals [][]byte) {
	r.find(raw, names, vals, false)
}

func (r *rec) find(raw []byte, names []string, vals [][]byte, all bool) (extra int, ok bool) {
	it, ok := objectMembers(raw)
	if !ok {
		return 0, false
	}
	missing := len(names)
	for {
		name, value, more := it.next()
		if !more {
			return extra, true
		}
		n := r.text(name)
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

// first returns the first element of the array raw and the number of
// elements; ok is false when raw is not an array.
func first(raw []byte) (elem []byte, n int, ok bool) {
	it, ok := arrayElements(raw)
	if !ok {
		return nil, 0, false
	}
	for {
		v, more := it.next()
		if !more {
			return elem, n, true
		}
		if n == 0 {
			elem = v
		}
		n++
	}
}

// head1 returns the first element of the array raw, or nil.
func head1(raw []byte) []byte {
	it, ok := arrayElements(raw)
	if !ok {
		return nil
	}
	v, _ := it.next()
	return v
}

// oneString reads raw as an array holding exactly one string and returns
// it.
func oneString(raw []byte) ([]byte, bool) {
	v, n, ok := first(raw)
	if !ok || n != 1 || !isString(v) {
		return nil, false
	}
	return v, true
}

// equalFold reports whether the string token tok's content equals s,
// ASCII letters compared without case.
func (r *rec) equalFold(tok []byte, s string) bool {
	t := r.text(tok)
	if len(t) != len(s) {
		return false
	}
	for k := range len(t) {
		a, b := t[k], s[k]
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

// hasPrefixFold is equalFold for a prefix.
func (r *rec) hasPrefixFold(tok []byte, prefix string) bool {
	t := r.text(tok)
	if len(t) < len(prefix) {
		return false
	}
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
