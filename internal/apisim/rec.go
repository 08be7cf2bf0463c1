package apisim

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A generated record is a flat stream of tokens in the order the fields are
// served (the seed's order), with string bytes in an arena. From it the
// record is written in its served form (keys unsorted, some escapes) or in
// its RFC 8785 canonical form (for the ground truth), and filters look fields
// up in it. A rec is reused from record to record: no maps, no allocation
// once warm.

type kind uint8

const (
	kStr kind = iota
	kInt
	kBool
	kNull
	kObj
	kArr
)

type tok struct {
	key  string
	n    int64 // kInt value; kBool: 0 or 1
	a, b int32 // kStr: arena[a:b]
	end  int32 // index of the next sibling (containers: after the last descendant)
	kind kind
}

// Served-form variations, chosen per record from its key, so that a
// collector's canonicalization is exercised (CONTRACT C7).
const (
	flEscNonASCII uint8 = 1 << iota // non-ASCII as \uXXXX (surrogate pairs above U+FFFF)
	flEscSlash                      // "/" as "\/"
	flUpperHex                      // \u escapes in upper-case hex
	flPlusOffset                    // core times with "+0000" instead of "Z"
)

type rec struct {
	toks  []tok
	arena []byte
	open  []int32
	flags uint8
	sort  []int32 // scratch for canonical member order
}

func (r *rec) reset(flags uint8) {
	r.toks = r.toks[:0]
	r.arena = r.arena[:0]
	r.open = r.open[:0]
	r.flags = flags
	r.beginObj("")
}

func (r *rec) push(t tok) {
	t.end = int32(len(r.toks)) + 1
	r.toks = append(r.toks, t)
}

func (r *rec) beginObj(key string) {
	r.open = append(r.open, int32(len(r.toks)))
	r.toks = append(r.toks, tok{key: key, kind: kObj})
}

func (r *rec) beginArr(key string) {
	r.open = append(r.open, int32(len(r.toks)))
	r.toks = append(r.toks, tok{key: key, kind: kArr})
}

// end closes the innermost open object or array.
func (r *rec) end() {
	i := r.open[len(r.open)-1]
	r.open = r.open[:len(r.open)-1]
	r.toks[i].end = int32(len(r.toks))
}

// finish closes the root object.
func (r *rec) finish() { r.end() }

func (r *rec) int(key string, v int64) { r.push(tok{key: key, n: v, kind: kInt}) }

func (r *rec) bool(key string, v bool) {
	var n int64
	if v {
		n = 1
	}
	r.push(tok{key: key, n: n, kind: kBool})
}

func (r *rec) null(key string) { r.push(tok{key: key, kind: kNull}) }

func (r *rec) str(key, s string) {
	a := int32(len(r.arena))
	r.arena = append(r.arena, s...)
	r.push(tok{key: key, a: a, b: int32(len(r.arena)), kind: kStr})
}

// mark starts a string the caller appends to r.arena; strFrom ends it.
func (r *rec) mark() int32 { return int32(len(r.arena)) }

func (r *rec) strFrom(key string, a int32) {
	r.push(tok{key: key, a: a, b: int32(len(r.arena)), kind: kStr})
}

// time writes a core record time: ISO 8601 with milliseconds (C3).
func (r *rec) time(key string, ms int64) {
	a := r.mark()
	r.arena = appendISO(r.arena, ms, r.flags&flPlusOffset != 0)
	r.strFrom(key, a)
}

func (r *rec) bytesOf(t *tok) []byte { return r.arena[t.a:t.b] }

// appendServed writes the record as served: members in generation order,
// with the record's escape variations. keep, when not nil, lists the
// top-level members to keep (the search's returns).
func (r *rec) appendServed(dst []byte, keep []string) []byte {
	dst = append(dst, '{')
	first := true
	for j := int32(1); j < r.toks[0].end; j = r.toks[j].end {
		if keep != nil && !contains(keep, r.toks[j].key) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = r.servedString(dst, r.toks[j].key)
		dst = append(dst, ':')
		dst = r.servedValue(dst, j)
	}
	return append(dst, '}')
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *rec) servedValue(dst []byte, j int32) []byte {
	t := &r.toks[j]
	switch t.kind {
	case kStr:
		return appendServedString(dst, r.arena[t.a:t.b], r.flags)
	case kInt:
		return strconv.AppendInt(dst, t.n, 10)
	case kBool:
		if t.n != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case kNull:
		return append(dst, "null"...)
	case kObj:
		dst = append(dst, '{')
		for c := j + 1; c < t.end; c = r.toks[c].end {
			if c > j+1 {
				dst = append(dst, ',')
			}
			dst = r.servedString(dst, r.toks[c].key)
			dst = append(dst, ':')
			dst = r.servedValue(dst, c)
		}
		return append(dst, '}')
	default: // kArr
		dst = append(dst, '[')
		for c := j + 1; c < t.end; c = r.toks[c].end {
			if c > j+1 {
				dst = append(dst, ',')
			}
			dst = r.servedValue(dst, c)
		}
		return append(dst, ']')
	}
}

func (r *rec) servedString(dst []byte, s string) []byte {
	return appendServedStringS(dst, s, r.flags)
}

// appendCanonical writes the record in RFC 8785 form: members sorted by the
// UTF-16 code units of their names, minimal string escapes, integers as is.
// It must agree byte for byte with record.Canonical of the served form.
func (r *rec) appendCanonical(dst []byte) []byte { return r.canonValue(dst, 0) }

func (r *rec) canonValue(dst []byte, j int32) []byte {
	t := &r.toks[j]
	switch t.kind {
	case kStr:
		return appendCanonString(dst, r.arena[t.a:t.b])
	case kObj:
		mark := len(r.sort)
		for c := j + 1; c < t.end; c = r.toks[c].end {
			r.sort = append(r.sort, c)
		}
		ms := r.sort[mark:]
		// Insertion sort: objects are small, mostly already sorted.
		for x := 1; x < len(ms); x++ {
			for y := x; y > 0 && lessUTF16(r.toks[ms[y]].key, r.toks[ms[y-1]].key); y-- {
				ms[y], ms[y-1] = ms[y-1], ms[y]
			}
		}
		dst = append(dst, '{')
		for x := range ms {
			c := r.sort[mark+x]
			if x > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonStringS(dst, r.toks[c].key)
			dst = append(dst, ':')
			dst = r.canonValue(dst, c)
		}
		r.sort = r.sort[:mark]
		return append(dst, '}')
	case kArr:
		dst = append(dst, '[')
		for c := j + 1; c < t.end; c = r.toks[c].end {
			if c > j+1 {
				dst = append(dst, ',')
			}
			dst = r.canonValue(dst, c)
		}
		return append(dst, ']')
	default:
		return r.servedValue(dst, j) // numbers and literals are already canonical
	}
}

// lessUTF16 orders member names by UTF-16 code units (RFC 8785 3.2.3).
func lessUTF16(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		if a[i] < 0xF0 && b[i] < 0xF0 {
			return a[i] < b[i]
		}
		ua, ub := utf16.Encode([]rune(a[i:])), utf16.Encode([]rune(b[i:]))
		for k := 0; k < len(ua) && k < len(ub); k++ {
			if ua[k] != ub[k] {
				return ua[k] < ub[k]
			}
		}
		return len(ua) < len(ub)
	}
	return len(a) < len(b)
}

const hexLower = "0123456789abcdef"
const hexUpper = "0123456789ABCDEF"

// appendServedString writes s as a JSON string with the escape variations
// of flags: control characters, quote and backslash always escaped (short
// forms where JSON has them), non-ASCII as \u escapes and "/" as "\/" when
// the record asks for it.
func appendServedString(dst, s []byte, flags uint8) []byte {
	dst = append(dst, '"')
	hx := hexLower
	if flags&flUpperHex != 0 {
		hx = hexUpper
	}
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' && b < 0x80 && (b != '/' || flags&flEscSlash == 0) {
			i++
			continue
		}
		if b >= 0x80 && flags&flEscNonASCII == 0 {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		if b >= 0x80 {
			r, size := utf8.DecodeRune(s[i:])
			if r >= 0x10000 {
				r1, r2 := utf16.EncodeRune(r)
				dst = appendU(dst, uint16(r1), hx)
				dst = appendU(dst, uint16(r2), hx)
			} else {
				dst = appendU(dst, uint16(r), hx)
			}
			i += size
			start = i
			continue
		}
		dst = appendEscape(dst, b, hx)
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendServedStringS(dst []byte, s string, flags uint8) []byte {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == '"' || b == '\\' || b >= 0x80 || b == '/' {
			return appendServedString(dst, []byte(s), flags)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func appendU(dst []byte, v uint16, hx string) []byte {
	return append(dst, '\\', 'u', hx[v>>12], hx[v>>8&0xF], hx[v>>4&0xF], hx[v&0xF])
}

func appendEscape(dst []byte, b byte, hx string) []byte {
	switch b {
	case '"':
		return append(dst, '\\', '"')
	case '\\':
		return append(dst, '\\', '\\')
	case '/':
		return append(dst, '\\', '/')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return appendU(dst, uint16(b), hx)
}

// appendCanonString writes s with the escapes of RFC 8785 3.2.2.2: quote,
// backslash and control characters only, short forms where JSON has them,
// lower-case \u00xx otherwise.
func appendCanonString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = appendEscape(dst, b, hexLower)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendCanonStringS(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == '"' || b == '\\' {
			return appendCanonString(dst, []byte(s))
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
