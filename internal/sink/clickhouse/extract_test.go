package clickhouse

import (
	"bytes"
	"encoding/json"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
)

// got collects what an extractor sets.
type got map[string]any

type collector struct {
	fields []schema.Field
	vals   got
}

func (c *collector) setString(f int, v string)  { c.vals[c.fields[f].Column] = v }
func (c *collector) setInt(f int, v int64)      { c.vals[c.fields[f].Column] = v }
func (c *collector) setTime(f int, v time.Time) { c.vals[c.fields[f].Column] = v }
func (c *collector) setIP(f int, v netip.Addr)  { c.vals[c.fields[f].Column] = v }
func (c *collector) setUInt8(f int, v uint8)    { c.vals[c.fields[f].Column] = v }

// Fields for extraction tests, as package schema builds its own.
func field(col, member string, k schema.Kind) schema.Field {
	return schema.Field{Column: col, Path: strings.Split(member, "."), Kind: k}
}
func str(col, member string) schema.Field        { return field(col, member, schema.KindString) }
func lowCard(col, member string) schema.Field    { return field(col, member, schema.KindString) }
func int64Field(col, member string) schema.Field { return field(col, member, schema.KindInt64) }
func timeField(col, member string) schema.Field  { return field(col, member, schema.KindTime) }

func extractAll(fields []schema.Field, raw string) got {
	c := &collector{fields: fields, vals: got{}}
	newExtractor(fields).extract([]byte(raw), c)
	return c.vals
}

func TestExtractTakesEachMemberOfItsTypeAndLeavesTheRestDefault(t *testing.T) {
	t.Parallel()
	fields := []schema.Field{
		str("s", "s"), lowCard("lc", "lc"), int64Field("n", "n"),
		int64Field("src_mid", "srcEntityId.mid"), int64Field("dst_mid", "dstEntityId.mid"),
		timeField("ts", "ts"),
	}
	cases := []struct {
		name string
		raw  string
		want got
	}{
		{"all members present", `{"s":"a","lc":"LOGIN","n":42,"srcEntityId":{"mid":7,"pid_hash":"x"},"dstEntityId":{"pid_hash":"y","mid":-8},"ts":1763600000123}`,
			got{"s": "a", "lc": "LOGIN", "n": int64(42), "src_mid": int64(7), "dst_mid": int64(-8), "ts": time.UnixMilli(1763600000123).UTC()}},
		{"members missing", `{"other":1}`, got{}},
		{"empty object", `{}`, got{}},
		{"whitespace everywhere", " {\n \"s\" : \"a\" ,\t\"n\" :\r\n 5 } ", got{"s": "a", "n": int64(5)}},
		{"a number sent as a string is no Int64", `{"n":"42"}`, got{}},
		{"a fraction is no Int64", `{"n":4.5}`, got{}},
		{"an exponent is no Int64", `{"n":1e3}`, got{}},
		{"an overflowing integer is no Int64", `{"n":9223372036854775808}`, got{}},
		{"the smallest Int64", `{"n":-9223372036854775808}`, got{"n": int64(math.MinInt64)}},
		{"the largest Int64", `{"n":9223372036854775807}`, got{"n": int64(math.MaxInt64)}},
		{"a leading zero is no JSON integer", `{"n":007}`, got{}},
		{"null is the default", `{"s":null,"n":null,"ts":null}`, got{}},
		{"an object is no string", `{"s":{"a":"b"},"lc":["x"]}`, got{}},
		{"numbers and booleans are strings as their text", `{"s":3,"lc":true}`, got{"s": "3", "lc": "true"}},
		{"escapes are decoded", `{"s":"C:\\Users\\\"q\"\u00fc\n\ud83d\ude00"}`, got{"s": "C:\\Users\\\"q\"ü\n😀"}},
		{"an escaped member name matches", `{"\u0073":"x"}`, got{"s": "x"}},
		{"a nested member that is not an object", `{"srcEntityId":"7","dstEntityId":[{"mid":1}]}`, got{}},
		{"nested names only count inside their object", `{"mid":1,"srcEntityId":{"x":{"mid":2}}}`, got{}},
		{"same name in other objects is skipped", `{"x":{"s":"inner","n":1},"s":"outer"}`, got{"s": "outer"}},
		{"strings holding braces and quotes are skipped whole", `{"x":"}{\"s\":\"no\"","s":"yes"}`, got{"s": "yes"}},
		{"the last duplicate wins", `{"s":"a","s":"b"}`, got{"s": "b"}},
		{"a time as an ISO string", `{"ts":"2026-11-20T10:00:00.5+0000"}`, got{"ts": time.Date(2026, 11, 20, 10, 0, 0, 5e8, time.UTC)}},
		{"a time of another type", `{"ts":{"ms":1}}`, got{}},
		{"a time beyond DateTime64 is clamped", `{"ts":"2400-01-01T00:00:00Z"}`, got{"ts": time.UnixMilli(maxTimeMillis).UTC()}},
		{"not an object", `[{"s":"a"}]`, got{}},
		{"members before malformed input are kept", `{"s":"a","n":`, got{"s": "a"}},
		{"truncated string", `{"s":"abc`, got{}},
		{"garbage", `not json`, got{}},
		{"empty", ``, got{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := extractAll(fields, c.raw)
			if len(g) != len(c.want) {
				t.Fatalf("extract(%s) = %#v, want %#v", c.raw, g, c.want)
			}
			for k, w := range c.want {
				if wt, ok := w.(time.Time); ok {
					if gt, _ := g[k].(time.Time); !gt.Equal(wt) {
						t.Errorf("extract(%s)[%s] = %v, want %v", c.raw, k, g[k], w)
					}
					continue
				}
				if g[k] != w {
					t.Errorf("extract(%s)[%s] = %#v, want %#v", c.raw, k, g[k], w)
				}
			}
		})
	}
}

// An IP column takes a string holding an IPv4 or IPv6 address and nothing
// else; a UInt8 column an integer from 0 to 255, bare or quoted. What is
// not taken stays NULL (the raw record keeps it).
func TestExtractTakesAddressesAndSmallIntegersOrLeavesNull(t *testing.T) {
	t.Parallel()
	fields := []schema.Field{field("ip", "ip", schema.KindIP), field("sev", "sev", schema.KindUInt8)}
	cases := []struct {
		name string
		raw  string
		want got
	}{
		{"an IPv4 address", `{"ip":"192.0.2.1","sev":3}`, got{"ip": netip.MustParseAddr("192.0.2.1"), "sev": uint8(3)}},
		{"an IPv6 address", `{"ip":"2001:db8::1"}`, got{"ip": netip.MustParseAddr("2001:db8::1")}},
		{"a v4-mapped IPv6 address", `{"ip":"::ffff:192.0.2.1"}`, got{"ip": netip.MustParseAddr("::ffff:192.0.2.1")}},
		{"a host name is no address", `{"ip":"host.example"}`, got{}},
		{"an empty string is no address", `{"ip":""}`, got{}},
		{"an address with a zone is refused", `{"ip":"fe80::1%eth0"}`, got{}},
		{"an address with a port is refused", `{"ip":"192.0.2.1:443"}`, got{}},
		{"octets with leading zeros are refused", `{"ip":"192.000.002.001"}`, got{}},
		{"a number is no address", `{"ip":3232235777}`, got{}},
		{"null", `{"ip":null,"sev":null}`, got{}},
		{"a severity as a string of digits", `{"sev":"5"}`, got{"sev": uint8(5)}},
		{"the bounds of UInt8", `{"sev":0}`, got{"sev": uint8(0)}},
		{"255", `{"sev":255}`, got{"sev": uint8(255)}},
		{"256 does not fit", `{"sev":256}`, got{}},
		{"a negative severity does not fit", `{"sev":-1}`, got{}},
		{"a word is no severity", `{"sev":"HIGH"}`, got{}},
		{"a fraction is no severity", `{"sev":2.5}`, got{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := extractAll(fields, c.raw)
			if len(g) != len(c.want) {
				t.Fatalf("extract(%s) = %#v, want %#v", c.raw, g, c.want)
			}
			for k, w := range c.want {
				if g[k] != w {
					t.Errorf("extract(%s)[%s] = %#v, want %#v", c.raw, k, g[k], w)
				}
			}
		})
	}
}

func TestGeneratedRecordsGiveTheirTypedValues(t *testing.T) {
	t.Parallel()
	for _, spec := range schema.Tables() {
		g := newGen(spec.Source, 7)
		for i := range 50 {
			r := g.record(time.Date(2026, 11, 1, i, 0, 0, 0, time.UTC))
			vals := extractAll(spec.Fields, string(r.raw))
			for col, want := range r.want {
				if wt, ok := want.(time.Time); ok {
					if gt, _ := vals[col].(time.Time); !gt.Equal(wt) {
						t.Errorf("%s %s: %v, want %v", spec.Source, col, vals[col], want)
					}
				} else if vals[col] != want {
					t.Errorf("%s %s: %#v, want %#v in %s", spec.Source, col, vals[col], want, r.raw)
				}
			}
		}
	}
}

// reference is what encoding/json makes of the fields: the oracle of the
// fuzz test.
func reference(fields []schema.Field, raw []byte) (got, bool) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, false
	}
	out := got{}
	for _, f := range fields {
		v, ok := top[f.Path[0]]
		if len(f.Path) == 2 {
			var sub map[string]json.RawMessage
			if !ok || json.Unmarshal(v, &sub) != nil {
				continue
			}
			v, ok = sub[f.Path[1]]
		}
		if !ok || len(v) == 0 {
			continue
		}
		switch f.Kind {
		case schema.KindString:
			var s string
			var n json.Number
			var b bool
			switch {
			case json.Unmarshal(v, &s) == nil && v[0] == '"':
				out[f.Column] = s
			case json.Unmarshal(v, &n) == nil && string(v) != "null":
				out[f.Column] = string(v)
			case json.Unmarshal(v, &b) == nil && string(v) != "null":
				out[f.Column] = string(v)
			}
		case schema.KindInt64:
			// v is valid JSON here, so ParseInt sees no leading zeros.
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				out[f.Column] = n
			}
		case schema.KindTime:
			if t, err := record.ParseTime(v); err == nil {
				out[f.Column] = clampTime(t)
			}
		}
	}
	return out, true
}

// FuzzExtract checks that extraction never panics, and that on valid JSON
// objects without duplicate members it agrees with encoding/json.
func FuzzExtract(f *testing.F) {
	fields := []schema.Field{str("s", "s"), int64Field("n", "n"), int64Field("m", "e.mid"), timeField("ts", "ts")}
	for _, seed := range []string{
		`{"s":"a","n":1,"e":{"mid":2},"ts":1763600000123}`, `{"s":"\u00fc\"","n":-0}`, `{"e":{"x":[1,{"mid":3}]}}`,
		`{"s":1.5e3,"n":"7"}`, `{"ts":"2026-11-20T10:00:00Z"}`, `{`, `{"s":`, `[]`, `{"n":00}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		g := extractAll(fields, string(raw))
		want, ok := reference(fields, raw)
		// encoding/json replaces invalid UTF-8, extract keeps the bytes.
		if !ok || !utf8.Valid(raw) || hasDuplicateMembers(raw) {
			return
		}
		if len(g) != len(want) {
			t.Fatalf("extract(%q) = %#v, encoding/json gives %#v", raw, g, want)
		}
		for k, w := range want {
			if wt, ok := w.(time.Time); ok {
				if gt, _ := g[k].(time.Time); !gt.Equal(wt) {
					t.Fatalf("extract(%q)[%s] = %v, want %v", raw, k, g[k], w)
				}
			} else if g[k] != w {
				t.Fatalf("extract(%q)[%s] = %#v, want %#v", raw, k, g[k], w)
			}
		}
	})
}

// hasDuplicateMembers reports whether any object in raw repeats a member
// name (encoding/json keeps the last, like extract, but a repeated parent
// object merges differently).
func hasDuplicateMembers(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		obj  bool
		seen map[string]bool
		key  bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.obj && top.key {
				if s, ok := tok.(string); ok {
					if top.seen[s] {
						return true
					}
					top.seen[s] = true
					top.key = false
					continue
				}
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, seen: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].key = true
		}
	}
}

func BenchmarkExtract(b *testing.B) {
	spec := specOf("connections")
	g := newGen("connections", 1)
	raw := g.record(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)).raw
	x := newExtractor(spec.Fields)
	c := &collector{fields: spec.Fields, vals: got{}}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		x.extract(raw, c)
	}
}
