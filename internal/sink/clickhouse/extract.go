package clickhouse

import (
	"encoding/json"
	"net/netip"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
)

// extractor pulls the typed fields of one table out of raw records with a
// single forward scan of the JSON: no map, no reflection, nothing decoded
// but the members asked for. A member that is missing, of another type or
// malformed leaves the column's default (see schema.Kind); extraction never
// fails, since the raw record is kept whole anyway.
//
// An extractor is immutable after newExtractor and safe for concurrent use.
type extractor struct {
	fields []schema.Field
	top    []memberKey
}

// memberKey is a member name the scan looks for, with the field it fills
// (field >= 0) or the members wanted inside it when it is an object.
type memberKey struct {
	name  string
	field int
	sub   []memberKey
}

func newExtractor(fields []schema.Field) *extractor {
	x := &extractor{fields: fields}
	for i, f := range fields {
		switch len(f.Path) {
		case 1:
			x.top = append(x.top, memberKey{name: f.Path[0], field: i})
		case 2:
			j := -1
			for k := range x.top {
				if x.top[k].name == f.Path[0] && x.top[k].field < 0 {
					j = k
				}
			}
			if j < 0 {
				x.top = append(x.top, memberKey{name: f.Path[0], field: -1})
				j = len(x.top) - 1
			}
			x.top[j].sub = append(x.top[j].sub, memberKey{name: f.Path[1], field: i})
		default:
			panic("clickhouse: field path of depth other than 1 or 2: " + f.Column)
		}
	}
	return x
}

// values receives the typed values of one record.
type values interface {
	setString(field int, v string)
	setInt(field int, v int64)
	setTime(field int, v time.Time)
	setIP(field int, v netip.Addr)
	setUInt8(field int, v uint8)
}

// extract scans raw and sets, through dst, every field found with a value
// of its kind. Fields not set keep whatever dst holds (the defaults).
func (x *extractor) extract(raw []byte, dst values) {
	i := skipWS(raw, 0)
	if i < len(raw) && raw[i] == '{' {
		x.scanObject(raw, i, x.top, dst)
	}
}

// scanObject scans the object at b[i] ('{'), filling the fields of keys.
// It returns the index after the object and false when b is malformed.
func (x *extractor) scanObject(b []byte, i int, keys []memberKey, dst values) (int, bool) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		ks, ke, esc, ok := scanString(b, i)
		if !ok {
			return i, false
		}
		key := b[ks:ke]
		if esc {
			key = unescapeKey(b[i : ke+1])
		}
		i = skipWS(b, ke+1)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = skipWS(b, i+1)
		end := -1
		for k := range keys {
			if string(key) != keys[k].name {
				continue
			}
			switch {
			case keys[k].field >= 0:
				end, ok = skipValue(b, i)
				if !ok {
					return i, false
				}
				x.set(keys[k].field, b[i:end], dst)
			case i < len(b) && b[i] == '{':
				end, ok = x.scanObject(b, i, keys[k].sub, dst)
				if !ok {
					return i, false
				}
			}
			break
		}
		if end < 0 {
			if end, ok = skipValue(b, i); !ok {
				return i, false
			}
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// set converts the JSON value v for field f, or leaves the default.
func (x *extractor) set(f int, v []byte, dst values) {
	if len(v) == 0 {
		return
	}
	switch x.fields[f].Kind {
	case schema.KindString:
		switch c := v[0]; {
		case c == '"':
			if s, ok := unquote(v); ok {
				dst.setString(f, s)
			}
		case c == '-' || ('0' <= c && c <= '9') || c == 't' || c == 'f':
			dst.setString(f, string(v))
		}
	case schema.KindInt64:
		if n, ok := parseInt64(v); ok {
			dst.setInt(f, n)
		}
	case schema.KindTime:
		if t, err := record.ParseTime(v); err == nil {
			dst.setTime(f, clampTime(t))
		}
	case schema.KindIP:
		if a, ok := parseIP(v); ok {
			dst.setIP(f, a)
		}
	case schema.KindUInt8:
		if v[0] == '"' && len(v) >= 2 {
			v = v[1 : len(v)-1]
		}
		if n, ok := parseInt64(v); ok && 0 <= n && n <= 255 {
			dst.setUInt8(f, uint8(n))
		}
	}
}

// parseIP reads a JSON string holding an IPv4 or IPv6 address. An address
// with a zone (fe80::1%eth0) is refused: an IPv6 column cannot hold the
// zone, and the same address without it would be another host's.
func parseIP(v []byte) (netip.Addr, bool) {
	if v[0] != '"' {
		return netip.Addr{}, false
	}
	s, ok := unquote(v)
	if !ok {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a, true
}

// parseInt64 reads a JSON integer (-?[0-9]+) that fits int64; a fraction,
// an exponent, a string or an overflow is not one.
func parseInt64(v []byte) (int64, bool) {
	neg := false
	if len(v) > 0 && v[0] == '-' {
		neg, v = true, v[1:]
	}
	if len(v) == 0 || len(v) > 19 || (v[0] == '0' && len(v) > 1) {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case !neg && n <= 1<<63-1:
		return int64(n), true
	case neg && n <= 1<<63:
		return -int64(n-1) - 1, true
	}
	return 0, false
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString scans the string whose opening quote is b[i]. It returns the
// bounds of its content (b[start:end], end being the closing quote) and
// whether it holds escapes.
func scanString(b []byte, i int) (start, end int, esc, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return i + 1, j, esc, true
		case '\\':
			esc = true
			j++
		}
	}
	return 0, 0, false, false
}

// skipValue returns the index just after the JSON value at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		_, end, _, ok := scanString(b, i)
		return end + 1, ok
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				_, end, _, ok := scanString(b, i)
				if !ok {
					return i, false
				}
				i = end
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j, j > i
			}
			j++
		}
		return j, j > i
	}
}

// unquote decodes the JSON string v (quotes included).
func unquote(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain {
		return string(inner), true
	}
	// Escapes are rare in these members: let encoding/json get \u
	// surrogate pairs and friends right.
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// unescapeKey decodes a member name holding escapes; a malformed one
// matches nothing.
func unescapeKey(v []byte) []byte {
	s, ok := unquote(v)
	if !ok {
		return nil
	}
	return []byte(s)
}

// DateTime64(3) holds 1900-01-01T00:00:00Z to 2299-12-31T23:59:59.999Z,
// in epoch milliseconds.
const (
	minTimeMillis = -2208988800000
	maxTimeMillis = 10413791999999
)

// clampTime keeps t inside what DateTime64(3) can hold, so that a wild
// record time is stored at the edge of the range instead of wrapping
// around (the raw record keeps the real value).
func clampTime(t time.Time) time.Time {
	switch ms := t.UnixMilli(); {
	case ms < minTimeMillis || t.Year() < 1900:
		return time.UnixMilli(minTimeMillis).UTC()
	case ms > maxTimeMillis || t.Year() > 2299:
		return time.UnixMilli(maxTimeMillis).UTC()
	}
	return t.UTC()
}
