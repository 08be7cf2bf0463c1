package ocsf_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/svcexport/collector/internal/ocsf"
	"github.com/svcexport/collector/internal/record"
)

// FuzzAppend maps arbitrary records of every source: Append must not
// panic, must refuse only what is no valid UTF-8 JSON, and every event
// must be valid OCSF on one line that keeps the record's unmapped members
// as sent.
func FuzzAppend(f *testing.F) {
	for k, source := range ocsf.Sources() {
		b, err := os.ReadFile(filepath.Join("testdata", "records", source+".ndjson"))
		if err != nil {
			f.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			_, raw, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
			f.Add(uint8(k), []byte(raw))
		}
	}
	for _, s := range []string{`{}`, `[]`, `null`, `{"mid":{"mid":1}}`, `{"eventMap":{"API":[{"KEY":[],"PROPS":7}]}}`,
		`{"endpointDetails":[{"dst_port":70000}],"srcEntityId":[]}`, `{"trace":"x","status":null,"severity":1e400}`} {
		f.Add(uint8(0), []byte(s))
	}
	s := loadSchema(f)
	m := ocsf.New(ocsf.Options{RawData: true})
	sources := ocsf.Sources()
	f.Fuzz(func(t *testing.T, k uint8, raw []byte) {
		source := sources[int(k)%len(sources)]
		direct := record.Envelope{Source: source, ID: "x", Record: raw}
		if out, _, err := m.Append(nil, &direct); err == nil {
			check(t, s, raw, out)
		} else if json.Valid(raw) && utf8.Valid(raw) {
			t.Fatalf("%s: valid JSON refused: %v", source, err)
		}
		e, _ := build(source, raw)
		out, _, err := m.Append(nil, &e)
		if err != nil {
			t.Fatalf("%s: a built envelope refused: %v", source, err)
		}
		check(t, s, e.Record, out)
	})
}

func check(t *testing.T, s *schema, raw, out []byte) {
	t.Helper()
	if errs := s.Validate(out); len(errs) > 0 {
		t.Fatalf("invalid event %v\nrecord %q\nevent  %s", errs, raw, out)
	}
	if bytes.ContainsAny(out, "\r\n") {
		t.Fatalf("event spans lines: %s", out)
	}
	var ev struct{ Unmapped map[string]json.RawMessage }
	if err := json.Unmarshal(out, &ev); err != nil {
		t.Fatalf("event: %v", err)
	}
	var rec map[string]json.RawMessage
	if json.Unmarshal(raw, &rec) != nil {
		return
	}
	for name, u := range ev.Unmapped {
		v, ok := rec[name]
		if !ok {
			continue // record, record_base64, or a repeated member
		}
		var a, b any
		json.Unmarshal(u, &a)
		json.Unmarshal(v, &b)
		if !reflect.DeepEqual(a, b) && bytes.Count(raw, []byte(`"`+name+`"`)) == 1 {
			t.Fatalf("unmapped.%s = %s, record has %s", name, u, v)
		}
	}
}
