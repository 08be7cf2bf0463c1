package record

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// C7: records that differ get different ids, for every shape the
// hostile-input review found colliding before.
func TestDistinctRecordsGetDistinctIDs(t *testing.T) {
	for _, c := range []struct{ name, a, b string }{
		{"integers above 2^53 that differ by one stay apart", `{"n":9007199254740993}`, `{"n":9007199254740992}`},
		{"negative integers above 2^53 that differ by one stay apart", `{"n":-9007199254740993}`, `{"n":-9007199254740992}`},
		{"64-bit ids that differ by one stay apart", `{"id":18446744073709551615}`, `{"id":18446744073709551614}`},
		{"2^60 and the decimal its float64 prints as stay apart", `{"n":1152921504606846976}`, `{"n":1152921504606847000}`},
		{"0.1 and the exact value of its float64 stay apart", `{"n":0.1}`, `{"n":0.1000000000000000055511151231257827021181583404541015625}`},
		{"a decimal with more digits than a float64 stays apart from its rounding", `{"n":333333333.33333329}`, `{"n":333333333.3333333}`},
		{"1e400 and 2e400 stay apart", `{"n":1e400}`, `{"n":2e400}`},
		{"1e400 and the largest float64 stay apart", `{"n":1e400}`, `{"n":1.7976931348623157e308}`},
		{"1e-400 and 0 stay apart", `{"n":1e-400}`, `{"n":0}`},
		{"-1e-400 and 1e-400 stay apart", `{"n":-1e-400}`, `{"n":1e-400}`},
		{"exponents beyond int64 that differ by one stay apart", `{"n":1e99999999999999999999}`, `{"n":1e99999999999999999998}`},
		{"a lone high surrogate and U+FFFD stay apart", `{"s":"\ud800"}`, `{"s":"\ufffd"}`},
		{"a lone low surrogate and U+FFFD stay apart", `{"s":"\udc00"}`, `{"s":"\ufffd"}`},
		{"two lone surrogates stay apart", `{"s":"\ud800"}`, `{"s":"\udbff"}`},
		{"a lone surrogate and its escape text stay apart", `{"s":"\ud800"}`, `{"s":"\\ud800"}`},
		{"a lone surrogate and its generalized UTF-8 bytes stay apart", `{"s":"\ud800"}`, "{\"s\":\"\xed\xa0\x80\"}"},
		{"a swapped surrogate pair and the character stay apart", `{"s":"\ude00\ud83d"}`, `{"s":"\ud83d\ude00"}`},
		{"an invalid byte and U+FFFD stay apart", "{\"s\":\"\xff\"}", `{"s":"\ufffd"}`},
		{"two invalid bytes stay apart", "{\"s\":\"\xff\"}", "{\"s\":\"\xfe\"}"},
		{"an invalid byte and the character of the same code stay apart", "{\"s\":\"\xff\"}", `{"s":"\u00ff"}`},
		{"an invalid byte in a name and U+FFFD stay apart", "{\"\xff\":1}", `{"\ufffd":1}`},
		{"a lone surrogate in a name and U+FFFD stay apart", `{"\ud800":1}`, `{"\ufffd":1}`},
		{"a repeated name and its last member stay apart", `{"x":1,"x":2}`, `{"x":2}`},
		{"a repeated name and its first member stay apart", `{"x":1,"x":2}`, `{"x":1}`},
		{"a repeated name's members in another order stay apart", `{"x":1,"x":2}`, `{"x":2,"x":1}`},
		{"a repeated name in a nested object stays apart", `{"o":{"x":1,"x":2}}`, `{"o":{"x":2}}`},
		{"a repeated name among others stays apart", `{"a":0,"x":1,"b":0,"x":2}`, `{"a":0,"b":0,"x":2}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h Hasher
			ida, err := h.ID("dns", []byte(c.a))
			if err != nil {
				t.Fatalf("ID(%s): %v", c.a, err)
			}
			idb, err := h.ID("dns", []byte(c.b))
			if err != nil {
				t.Fatalf("ID(%s): %v", c.b, err)
			}
			if ida == idb {
				ca, _ := Canonical([]byte(c.a))
				cb, _ := Canonical([]byte(c.b))
				t.Fatalf("same id %s\n%q -> %q\n%q -> %q", ida, c.a, ca, c.b, cb)
			}
		})
	}
}

// C7: the same record served in another form gets the same id, odd shapes
// included.
func TestEqualRecordsGetEqualIDs(t *testing.T) {
	for _, c := range []struct{ name, a, b string }{
		{"key order and whitespace do not count", `{"a":1,"b":[1,2]}`, " { \"b\" : [ 1 , 2 ] ,\n\"a\":1 } "},
		{"escapes do not count", `{"s":"é€😀/"}`, `{"s":"\u00E9\u20ac\uD83D\uDE00\/"}`},
		{"trailing zeros do not count", `{"n":0.1}`, `{"n":0.10}`},
		{"exponent spelling does not count", `{"n":1e21}`, `{"n":1E+021}`},
		{"zero's sign does not count", `{"n":0}`, `{"n":-0.0e5}`},
		{"a big integer's spelling does not count", `{"n":9007199254740993}`, `{"n":90071992547409930e-1}`},
		{"a kept decimal's spelling does not count", `{"n":333333333.33333329}`, `{"n":3.333333333333332900e8}`},
		{"a huge number's spelling does not count", `{"n":1e400}`, `{"n":10.0E399}`},
		{"a huge exponent's spelling does not count", `{"n":1e99999999999999999999}`, `{"n":0.1e000100000000000000000000}`},
		{"a lone surrogate's hex case does not count", `{"s":"\uD800"}`, `{"s":"\ud800"}`},
		{"the order of other names around a repeated one does not count", `{"x":1,"y":0,"x":2}`, `{"y":0,"x":1,"x":2}`},
		{"key order does not count for odd names", "{\"\xff\":1,\"\\ud800\":2,\"\xed\xa0\x80\":3,\"a\":4}", "{\"a\":4,\"\xed\xa0\x80\":3,\"\\ud800\":2,\"\xff\":1}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ida, erra := ID("dns", []byte(c.a))
			idb, errb := ID("dns", []byte(c.b))
			if erra != nil || errb != nil || ida != idb {
				ca, _ := Canonical([]byte(c.a))
				cb, _ := Canonical([]byte(c.b))
				t.Fatalf("ids %s (%v), %s (%v)\n%q -> %q\n%q -> %q", ida, erra, idb, errb, c.a, ca, c.b, cb)
			}
		})
	}
}

func TestCanonicalNumbers(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"a short integer is itself", `123`, `123`},
		{"negative zero is zero", `-0`, `0`},
		{"an exact float64 keeps the ECMAScript form", `1E30`, `1e+30`},
		{"a shortest decimal keeps the ECMAScript form", `4.50`, `4.5`},
		{"2^53 keeps the ECMAScript form", `9007199254740992`, `9007199254740992`},
		{"1e21 keeps the ECMAScript form", `1000000000000000000000`, `1e+21`},
		{"the largest float64 keeps the ECMAScript form", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"the smallest float64 keeps the ECMAScript form", `5e-324`, `5e-324`},
		{"2^53+1 keeps its value", `9007199254740993`, `9007199254740993`},
		{"2^60 in full keeps its value", `1152921504606846976`, `1152921504606846976`},
		{"a 30-digit integer keeps its value in exponent form", `123456789012345678901234567890`, `1.2345678901234567890123456789e+29`},
		{"a long decimal keeps its value", `0.1000000000000000055511151231257827021181583404541015625`, `0.1000000000000000055511151231257827021181583404541015625`},
		{"a tiny long decimal keeps its value in exponent form", `0.00000012345678901234567890`, `1.234567890123456789e-7`},
		{"1e400 keeps its value", `1e400`, `1e+400`},
		{"-1E-400 keeps its value", `-1E-400`, `-1e-400`},
		{"an exponent beyond int64 keeps its value", `-12.5e99999999999999999999`, `-1.25e+100000000000000000000`},
		{"a negative exponent beyond int64 keeps its value", `1e-99999999999999999999`, `1e-99999999999999999999`},
		{"zero with an exponent beyond int64 is zero", `0.000e99999999999999999999`, `0`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Canonical([]byte(c.in))
			if err != nil || string(got) != c.want {
				t.Fatalf("Canonical(%s) = %s, %v; want %s", c.in, got, err, c.want)
			}
		})
	}
}

func TestCanonicalStringsKeepWhatUTF8CannotSay(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"a lone high surrogate stays an escape", `"a\ud800b"`, `"a\ud800b"`},
		{"a lone surrogate escape is written in lowercase", `"\uDBFF"`, `"\udbff"`},
		{"a lone low surrogate stays an escape", `"\udc00"`, `"\udc00"`},
		{"a high surrogate before a non-surrogate escape stays an escape", `"\ud800\u0041"`, `"\ud800A"`},
		{"two high surrogates then a low one are a lone one and a pair", `"\ud83d\ud83d\ude00"`, `"\ud83d😀"`},
		{"an escaped backslash stays doubled", `"\\ud800"`, `"\\ud800"`},
		{"invalid bytes are copied", "\"a\xffb\xc0\"", "\"a\xffb\xc0\""},
		{"invalid bytes next to escapes are copied", "\"\xff\\n\xfe\"", "\"\xff\\n\xfe\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Canonical([]byte(c.in))
			if err != nil || string(got) != c.want {
				t.Fatalf("Canonical(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}

// C7 as a property: over many random documents made of the shapes that
// collide (numbers near and beyond float64's precision and range, lone
// surrogates, invalid bytes, U+FFFD, repeated names), two spellings of one
// document get one id, and documents that differ get different ids. What
// "differ" means comes from a model of the documents built here, not from
// the canonicalizer.
func TestIDIsInjectiveOnCollisionProneDocuments(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	idOf := map[string]string{}
	docOf := map[string]string{}
	var h Hasher
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		v := genValue(rng, 0)
		sem := v.sem()
		a, b := v.spell(rng, nil), v.spell(rng, nil)
		ida, err := h.ID("dns", a)
		if err != nil {
			t.Fatalf("ID(%q): %v", a, err)
		}
		idb, err := h.ID("dns", b)
		if err != nil {
			t.Fatalf("ID(%q): %v", b, err)
		}
		if ida != idb {
			t.Fatalf("one document, two ids:\n%q\n%q\nmodel %s", a, b, sem)
		}
		if prev, ok := idOf[sem]; ok && prev != ida {
			t.Fatalf("one document, two ids across draws: %q (model %s)", a, sem)
		}
		if prev, ok := docOf[ida]; ok && prev != sem {
			t.Fatalf("collision: id %s for\n%s\n%s\nlast spelled %q", ida, prev, sem, a)
		}
		idOf[sem], docOf[ida] = ida, sem
	}
	if len(docOf) < n/4 {
		t.Fatalf("only %d distinct documents in %d draws: the generator is too narrow", len(docOf), n)
	}
	t.Logf("%d draws, %d distinct documents", n, len(docOf))
}

// jv is a JSON document of the model: what a record means, independent of
// how it is spelled.
type jv struct {
	kind byte // 'n' number, 's' string, 'o' object, 'a' array, 'l' literal
	neg  bool
	dig  string   // number: value is dig × 10^exp
	exp  *big.Int // number
	str  []unit   // string
	lit  string   // literal
	mem  [][2]*jv // object members in input order: name (a string), value
	arr  []*jv    // array
}

// unit is one element of a string: 'c' a character, 's' a lone surrogate,
// 'b' a byte that is not UTF-8.
type unit struct {
	kind byte
	v    rune
}

func genValue(rng *rand.Rand, depth int) *jv {
	k := rng.IntN(10)
	if depth >= 2 {
		k = rng.IntN(6)
	}
	switch {
	case k < 3:
		return genNumber(rng)
	case k < 5:
		return &jv{kind: 's', str: genUnits(rng, 1+rng.IntN(3))}
	case k < 6:
		return &jv{kind: 'l', lit: []string{"true", "false", "null"}[rng.IntN(3)]}
	case k < 9:
		v := &jv{kind: 'o'}
		for range 1 + rng.IntN(4) {
			v.mem = append(v.mem, [2]*jv{{kind: 's', str: genUnits(rng, 1)}, genValue(rng, depth+1)})
		}
		return v
	default:
		v := &jv{kind: 'a'}
		for range rng.IntN(3) {
			v.arr = append(v.arr, genValue(rng, depth+1))
		}
		return v
	}
}

func genNumber(rng *rand.Rand) *jv {
	digits := []string{"0", "1", "5", "10", "9007199254740992", "9007199254740993", "1152921504606846976",
		"1152921504606847", "18446744073709551615", "1000000000000000055511151231257827021181583404541015625",
		"333333333333333329", "3333333333333333", "17976931348623157", "4940656458412465441765687928682213723651"}
	exps := []int64{-400, -324, -60, -55, -20, -17, -16, -10, -3, -1, 0, 0, 0, 1, 2, 3, 292, 300, 400}
	e := big.NewInt(exps[rng.IntN(len(exps))])
	if rng.IntN(40) == 0 {
		e.Exp(big.NewInt(10), big.NewInt(20), nil)
		if rng.IntN(2) == 0 {
			e.Neg(e)
		}
	}
	return &jv{kind: 'n', neg: rng.IntN(4) == 0, dig: digits[rng.IntN(len(digits))], exp: e}
}

// genUnits draws string units from a small alphabet, so that strings and
// names repeat often; a lone high surrogate is never followed by a lone low
// one (the two would be one character).
func genUnits(rng *rand.Rand, n int) []unit {
	alphabet := []unit{{'c', 'x'}, {'c', 'y'}, {'c', '"'}, {'c', '\\'}, {'c', '/'}, {'c', '\n'}, {'c', 0x1f},
		{'c', 'é'}, {'c', 0xFFFD}, {'c', 0xD7FF}, {'c', 0xE000}, {'c', 0x1F600}, {'c', 0x10000},
		{'s', 0xD800}, {'s', 0xDBFF}, {'s', 0xDC00}, {'s', 0xDFFF},
		{'b', 0xFF}, {'b', 0xFE}, {'b', 0xC0}, {'b', 0xF5}, {'b', 0x80}, {'b', 0xBF}, {'b', -1}}
	var out []unit
	for len(out) < n {
		u := alphabet[rng.IntN(len(alphabet))]
		if u.kind == 's' && u.v >= 0xDC00 && len(out) > 0 && out[len(out)-1].kind == 's' && out[len(out)-1].v < 0xDC00 {
			continue
		}
		if u.v == -1 { // a surrogate encoded in UTF-8: three bytes that are not UTF-8
			out = append(out, unit{'b', 0xED}, unit{'b', 0xA0}, unit{'b', 0x80})
			continue
		}
		out = append(out, u)
	}
	return out
}

// sem is the model's meaning of v: equal for equal documents, different
// for different ones.
func (v *jv) sem() string {
	switch v.kind {
	case 'n':
		d := strings.TrimLeft(v.dig, "0")
		e := new(big.Int).Set(v.exp)
		for strings.HasSuffix(d, "0") {
			d = d[:len(d)-1]
			e.Add(e, big.NewInt(1))
		}
		if d == "" {
			return "0"
		}
		sign := "+"
		if v.neg {
			sign = "-"
		}
		return sign + d + "e" + e.String()
	case 's':
		var b strings.Builder
		b.WriteByte('"')
		for _, u := range v.str {
			fmt.Fprintf(&b, "%c%x.", u.kind, u.v)
		}
		return b.String()
	case 'l':
		return v.lit
	case 'a':
		parts := make([]string, len(v.arr))
		for i, e := range v.arr {
			parts[i] = e.sem()
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	type m struct{ name, value string }
	ms := make([]m, len(v.mem))
	for i, p := range v.mem {
		ms[i] = m{p[0].sem(), p[1].sem()}
	}
	// Members of one name keep their order; the order of names does not
	// count.
	slices.SortStableFunc(ms, func(a, b m) int { return strings.Compare(a.name, b.name) })
	parts := make([]string, len(ms))
	for i, p := range ms {
		parts[i] = p.name + ":" + p.value
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// spell appends one of the many JSON texts of v, chosen at random.
func (v *jv) spell(rng *rand.Rand, dst []byte) []byte {
	if rng.IntN(8) == 0 {
		dst = append(dst, " \n\t\r"[rng.IntN(4)])
	}
	switch v.kind {
	case 'n':
		return spellNumber(rng, dst, v)
	case 's':
		return spellString(rng, dst, v.str)
	case 'l':
		return append(dst, v.lit...)
	case 'a':
		dst = append(dst, '[')
		for i, e := range v.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.spell(rng, dst)
		}
		return append(dst, ']')
	}
	// Shuffle the members, then put each name's members back in their
	// order on the places the shuffle gave that name.
	perm := rng.Perm(len(v.mem))
	order := make([]int, len(v.mem))
	for i, p := range perm {
		order[i] = p
	}
	names := make([]string, len(v.mem))
	for i, p := range v.mem {
		names[i] = p[0].sem()
	}
	next := map[string]int{} // how many members of a name are placed
	for i, p := range order {
		name := names[p]
		k := next[name]
		next[name]++
		seen := 0
		for j := range v.mem { // the k-th member of this name
			if names[j] == name {
				if seen == k {
					order[i] = j
					break
				}
				seen++
			}
		}
	}
	dst = append(dst, '{')
	for i, j := range order {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = v.mem[j][0].spell(rng, dst)
		dst = append(dst, ':')
		dst = v.mem[j][1].spell(rng, dst)
	}
	return append(dst, '}')
}

func spellNumber(rng *rand.Rand, dst []byte, v *jv) []byte {
	if v.neg {
		dst = append(dst, '-')
	}
	d, e := v.dig, new(big.Int).Set(v.exp)
	// Move the decimal point s digits to the left (s may exceed len(d):
	// leading zeros), or add trailing zeros to the fraction.
	if e.IsInt64() && rng.IntN(2) == 0 && d != "0" {
		s := rng.IntN(len(d) + 3)
		if s > 0 {
			if s >= len(d) {
				d = strings.Repeat("0", s-len(d)+1) + d
			}
			d = d[:len(d)-s] + "." + d[len(d)-s:] + strings.Repeat("0", rng.IntN(2))
			e.Add(e, big.NewInt(int64(s)))
		}
	}
	dst = append(dst, d...)
	if e.Sign() == 0 && rng.IntN(2) == 0 {
		return dst
	}
	dst = append(dst, "eE"[rng.IntN(2)])
	switch {
	case e.Sign() < 0:
		dst = append(dst, '-')
	case rng.IntN(2) == 0:
		dst = append(dst, '+')
	}
	dst = append(dst, strings.Repeat("0", rng.IntN(2))...)
	return append(dst, new(big.Int).Abs(e).String()...)
}

func spellString(rng *rand.Rand, dst []byte, us []unit) []byte {
	hex4 := func(dst []byte, r rune) []byte {
		digits := "0123456789abcdef"
		if rng.IntN(2) == 0 {
			digits = "0123456789ABCDEF"
		}
		return append(dst, '\\', 'u', digits[r>>12&0xF], digits[r>>8&0xF], digits[r>>4&0xF], digits[r&0xF])
	}
	dst = append(dst, '"')
	for _, u := range us {
		switch {
		case u.kind == 'b':
			dst = append(dst, byte(u.v))
		case u.kind == 's':
			dst = hex4(dst, u.v)
		case rng.IntN(2) == 0 && u.v >= 0x20 && u.v != '"' && u.v != '\\':
			dst = utf8.AppendRune(dst, u.v)
		case u.v > 0xFFFF:
			hi, lo := utf16.EncodeRune(u.v)
			dst = hex4(hex4(dst, hi), lo)
		default:
			short := map[rune]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\n': `\n`}
			if s, ok := short[u.v]; ok && rng.IntN(2) == 0 {
				dst = append(dst, s...)
			} else {
				dst = hex4(dst, u.v)
			}
		}
	}
	return append(dst, '"')
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-0,1e400]}`, `"\ud83d\ude00"`, `{"b":1,"a":{"d":null,"c":true}}`, `[]`, `-12.5e-3`,
		`{"x":1,"x":2}`, `"\ud800"`, "\"\xff\"", `9007199254740993`, `1e99999999999999999999`, "{\"\xff\":1,\"\\ud800\":2,\"\xed\xa0\x80\":3}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Canonical(in)
		if _, idErr := ID("dns", in); (err == nil) != (idErr == nil) {
			t.Fatalf("Canonical: %v, ID: %v", err, idErr)
		}
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form of %q is not JSON: %q", in, c)
		}
		c2, err := Canonical(c)
		if err != nil || string(c2) != string(c) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, c, c2, err)
		}
	})
}
