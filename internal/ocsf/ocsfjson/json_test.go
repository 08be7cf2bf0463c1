package ocsfjson

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzJSON checks the scanner against encoding/json: the same texts are
// valid (Value too, which also refuses invalid UTF-8), strings decode
// alike, and compacting keeps the value.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `"\ud83d\ude80\u00e9\n"`, `"\ud800x"`, `[1,-0.5e+3,true,null]`, "{\n \"a\" : [ ] }",
		`{"a":"\""}`, `01`, `"\x"`, `[1,]`, `-`, `1.`, `"a` + "\t" + `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		start := skipSpace(b, 0)
		end, err := skipValue(b, start, 0)
		ok := err == nil && skipSpace(b, end) == len(b)
		if utf8.Valid(b) && ok != json.Valid(b) {
			t.Fatalf("scanner says %v, encoding/json %v for %q", ok, json.Valid(b), s)
		}
		val, verr := Value(b)
		if (verr == nil) != (ok && utf8.Valid(b)) {
			t.Fatalf("Value says %v, the scanner %v and UTF-8 %v for %q", verr, ok, utf8.Valid(b), s)
		}
		if !ok || !utf8.Valid(b) {
			return // Value refuses invalid UTF-8 before scanning
		}
		v := b[start:end]
		if string(val) != string(v) {
			t.Fatalf("Value(%q) = %q, want %q", s, val, v)
		}
		var want, got any
		if err := json.Unmarshal(v, &want); err != nil {
			return // invalid UTF-8
		}
		if err := json.Unmarshal(appendOneLine(nil, v), &got); err != nil {
			t.Fatalf("compact %q: %v", v, err)
		}
		if wantS, isStr := want.(string); isStr {
			if u := string(AppendUnquoted(nil, v)); u != wantS {
				t.Fatalf("AppendUnquoted(%s) = %q, want %q", v, u, wantS)
			}
			var back string
			if err := json.Unmarshal(appendString(nil, wantS), &back); err != nil || back != wantS {
				t.Fatalf("appendString(%q) reads back as %q, %v", wantS, back, err)
			}
		}
		if n, ok := ParseInt(v); ok {
			if f, isNum := want.(float64); isNum && float64(n) != f {
				t.Fatalf("ParseInt(%s) = %d, want %v", v, n, f)
			}
		}
	})
}
