package record

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Test vectors of RFC 8785 appendix B: IEEE 754 bit patterns and their
// ECMAScript serialization.
func TestECMANumberMatchesRFC8785AppendixB(t *testing.T) {
	cases := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, c := range cases {
		got, err := AppendECMANumber(nil, math.Float64frombits(c.bits))
		if err != nil || string(got) != c.want {
			t.Errorf("bits %#x: got %q (%v), want %q", c.bits, got, err, c.want)
		}
	}
	if _, err := AppendECMANumber(nil, math.NaN()); err == nil {
		t.Error("NaN must not serialize")
	}
}

// RFC 8785 section 3.2.2's example, with one deliberate difference: its
// 333333333.33333329 has more digits than a float64 carries, so its exact
// value is kept (RFC 8785 would write 333333333.3333333, the float64's
// value, which 333333333.3333333 itself has too: a collision).
func TestCanonicalRFC8785Example(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 333333333.3333333, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.33333329,333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := Canonical([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalSortsByUTF16CodeUnits(t *testing.T) {
	in := `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`
	got, err := Canonical([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	dec := json.NewDecoder(strings.NewReader(string(got)))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		dec.Token()
		order = append(order, k.(string))
	}
	want := []string{"\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001F600", "\ufb33"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Fatalf("order %q, want %q", order, want)
	}
}

func TestCanonicalIgnoresKeyOrderWhitespaceAndEscapes(t *testing.T) {
	a := `{"b":{"y":[1,2,{"q":"é"}],"x":1.0},"a":"line\nbreak"}`
	b := "{ \"a\" : \"line\\u000abreak\", \"b\" : { \"x\" : 1, \"y\" : [ 1 , 2 , { \"q\" : \"\\u00e9\" } ] } }"
	ca, err := Canonical([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := Canonical([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if string(ca) != string(cb) {
		t.Fatalf("%s != %s", ca, cb)
	}
	ida, _ := ID("dns", []byte(a))
	idb, _ := ID("dns", []byte(b))
	idc, _ := ID("connections", []byte(a))
	if ida != idb || ida == idc || len(ida) != IDLen {
		t.Fatalf("ids: %s %s %s", ida, idb, idc)
	}
}

func TestCanonicalRejectsMalformedInput(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `"\x"`, `"\q"`, `{"a":1} x`, `tru`, "\"a\x01\"", `"\ud800"x`,
		"\xff", "[\xff]", `"\ud800\u12"`, `1e`, `-`, `.5`, `+1`, `"abc`, strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)} {
		if _, err := Canonical([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// Every member of a repeated name is kept, in input order (a deviation
// from ECMAScript's JSON.parse, where the last wins), so that
// {"x":1,"x":2} and {"x":2} stay apart.
func TestCanonicalDuplicateNamesKeepEveryMemberInInputOrder(t *testing.T) {
	got, err := Canonical([]byte(`{"a":3,"b":2,"a":1}`))
	if err != nil || string(got) != `{"a":3,"a":1,"b":2}` {
		t.Fatalf("got %s, %v", got, err)
	}
}

func TestCanonicalFieldCapturesTopLevelMemberOnly(t *testing.T) {
	raw := []byte(`{"x":{"createdTime":"nested"},"createdTime" : "2026-11-20T10:00:00.123Z","y":1}`)
	_, f, err := AppendCanonicalField(nil, raw, "createdTime")
	if err != nil || string(f) != `"2026-11-20T10:00:00.123Z"` {
		t.Fatalf("field %s, %v", f, err)
	}
}

func BenchmarkRecordID(b *testing.B) {
	raw := []byte(`{"createdTime":"2026-11-20T10:00:00.123Z","mid":12345,"fqdn":"host-17.example.com","hostIpAddr":"10.1.2.3","ttl":300,"dnsServerIp":"10.0.0.2","tags":{"env":"prod","owner":"José Müller"},"extra":[1,2,3]}`)
	var h Hasher
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := h.ID("dns", raw); err != nil {
			b.Fatal(err)
		}
	}
}
