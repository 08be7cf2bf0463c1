package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEnvelopeJSONKeepsTheRecordVerbatim(t *testing.T) {
	var b Builder
	raw := []byte(`{"fqdn":"ex.com","createdTime":"2026-11-20T10:00:00.123Z","extra":{"ü":[1]}}`)
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	e, flaw := b.Build("dns", "acme", "createdTime", at, at.Add(24*time.Hour), at.Add(48*time.Hour), raw)
	if flaw != 0 || e.Original != nil {
		t.Fatalf("flaw %v, original %q", flaw, e.Original)
	}
	id, _ := ID("dns", raw)
	if e.ID != id {
		t.Fatalf("id %s != %s", e.ID, id)
	}
	got := string(e.AppendJSON(nil))
	want := `{"id":"` + id + `","source":"dns","account":"acme","time":"2026-11-20T10:00:00.123Z","window_start":"2026-11-20T00:00:00.000Z","window_end":"2026-11-21T00:00:00.000Z","fetched_at":"2026-11-22T00:00:00.000Z","record":` + string(raw) + `}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if nd := string(e.AppendNDJSON(nil)); nd != want+"\n" {
		t.Fatalf("NDJSON %s", nd)
	}
}

// notJSONID is the id FlawNotJSON documents, computed here by hand.
func notJSONID(source string, raw []byte) string {
	h := sha256.New()
	h.Write([]byte(source))
	h.Write([]byte{'\n', 0xFF})
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil))
}

// Build never fails a record: each defect becomes a flaw, the envelope
// says what was sent, and the id stays that of the bytes as sent.
func TestBuildTurnsEveryDefectIntoAFlaw(t *testing.T) {
	start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	at := time.Date(2026, 11, 20, 10, 0, 0, 123e6, time.UTC)
	for _, c := range []struct {
		name, raw  string
		flaw       Flaw
		time       time.Time // zero: the window start
		record     string    // "": the raw record itself
		notJSONID  bool
		idOfRecord string // "": ID(source, raw)
	}{
		{name: "an ordinary record has no flaw", raw: `{"t":"2026-11-20T10:00:00.123Z","a":1}`, time: at},
		{name: "lone surrogates, repeated names and huge numbers are no flaw",
			raw: `{"t":1795168800123,"s":"\ud800","x":1,"x":2,"n":1e400}`, time: at},
		{name: "invalid UTF-8 is repaired byte by byte and the time still read",
			raw: "{\"t\":\"2026-11-20T10:00:00.123Z\",\"s\":\"a\xff\xfeb\",\"\xc0\":1}", flaw: FlawInvalidUTF8, time: at,
			record: "{\"t\":\"2026-11-20T10:00:00.123Z\",\"s\":\"a\uFFFD\uFFFDb\",\"\uFFFD\":1}"},
		{name: "invalid UTF-8 in the time makes it unreadable",
			raw: "{\"t\":\"2026-11-20T10:00:00.123Z\xff\"}", flaw: FlawInvalidUTF8 | FlawTimeUnreadable,
			record: "{\"t\":\"2026-11-20T10:00:00.123Z\uFFFD\"}"},
		{name: "a surrogate encoded in UTF-8 is three invalid bytes",
			raw: "{\"t\":0,\"s\":\"\xed\xa0\x80\"}", flaw: FlawInvalidUTF8, time: time.Unix(0, 0).UTC(),
			record: "{\"t\":0,\"s\":\"\uFFFD\uFFFD\uFFFD\"}"},
		{name: "a bad escape is not JSON", raw: `{"t":0,"s":"\q"}`, flaw: FlawNotJSON, record: "null", notJSONID: true},
		{name: "a truncated record is not JSON", raw: `{"t":0,"s":"abc`, flaw: FlawNotJSON, record: "null", notJSONID: true},
		{name: "an empty record is not JSON", raw: ``, flaw: FlawNotJSON, record: "null", notJSONID: true},
		{name: "data after the value is not JSON", raw: `{"t":0} {"t":1}`, flaw: FlawNotJSON, record: "null", notJSONID: true},
		{name: "a raw control character is not JSON", raw: "{\"t\":0,\"s\":\"a\tb\"}", flaw: FlawNotJSON, record: "null", notJSONID: true},
		{name: "invalid UTF-8 outside a string is not JSON", raw: "{\"t\":0}\xff", flaw: FlawNotJSON, record: "null", notJSONID: true},
		{name: "a record without its time member misses its time", raw: `{"fqdn":"x"}`, flaw: FlawTimeMissing},
		{name: "a null time is missing", raw: `{"t":null}`, flaw: FlawTimeMissing},
		{name: "a record that is no object misses its time", raw: `[1,2]`, flaw: FlawTimeMissing},
		{name: "a time member only nested does not count", raw: `{"x":{"t":0}}`, flaw: FlawTimeMissing},
		{name: "a word is an unreadable time", raw: `{"t":"yesterday"}`, flaw: FlawTimeUnreadable},
		{name: "1e300 is a time out of range", raw: `{"t":1e300}`, flaw: FlawTimeOutOfRange},
		{name: "NaN in a string is a time out of range", raw: `{"t":"NaN"}`, flaw: FlawTimeOutOfRange},
		{name: "the year 1 is a time out of range", raw: `{"t":"0001-01-01T00:00:00Z"}`, flaw: FlawTimeOutOfRange},
		{name: "of a repeated time member the last counts", raw: `{"t":"x","t":1795168800123}`, time: at},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b Builder
			raw := []byte(c.raw)
			e, flaw := b.Build("dns", "acme", "t", start, end, end, raw)
			if flaw != c.flaw {
				t.Fatalf("flaw %v, want %v", flaw, c.flaw)
			}
			want := c.time
			if want.IsZero() {
				want = start
			}
			if !e.Time.Equal(want) {
				t.Errorf("time %v, want %v", e.Time, want)
			}
			wantRec := c.record
			if wantRec == "" {
				wantRec = c.raw
			}
			if string(e.Record) != wantRec {
				t.Errorf("record %q, want %q", e.Record, wantRec)
			}
			if !json.Valid(e.Record) || !utf8.Valid(e.Record) {
				t.Errorf("record %q is not valid JSON", e.Record)
			}
			repaired := flaw&(FlawInvalidUTF8|FlawNotJSON) != 0
			if repaired != (e.Original != nil) || (repaired && !bytes.Equal(e.Original, raw)) {
				t.Errorf("original %q with flaw %v", e.Original, flaw)
			}
			if c.notJSONID {
				if e.ID != notJSONID("dns", raw) {
					t.Errorf("id %s, want the 0xFF id", e.ID)
				}
				if _, err := ID("dns", raw); err == nil {
					t.Errorf("ID accepts what Build found no JSON")
				}
			} else if id, err := ID("dns", raw); err != nil || e.ID != id {
				t.Errorf("id %s, ID %s, %v", e.ID, id, err)
			}
			if e.Source != "dns" || e.Account != "acme" || !e.WindowStart.Equal(start) || !e.WindowEnd.Equal(end) {
				t.Errorf("envelope %+v", e)
			}
		})
	}
}

// A flawed record's line carries the bytes as sent in base64 right after
// the record, and stays one valid JSON line.
func TestAppendNDJSONCarriesTheOriginalInBase64(t *testing.T) {
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, raw, record string
	}{
		{"a record with invalid UTF-8 carries its original", "{\"t\":0,\n\"s\":\"\xff\"}", "{\"t\":0, \"s\":\"\uFFFD\"}"},
		{"a record that is no JSON carries its original", "{\"t\":0,\r\n\"s\":\"\\q\"", "null"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b Builder
			e, _ := b.Build("dns", "acme", "t", at, at, at, []byte(c.raw))
			line := e.AppendNDJSON([]byte("previous line\n"))
			line = bytes.TrimPrefix(line, []byte("previous line\n"))
			if bytes.Count(line, []byte{'\n'}) != 1 || line[len(line)-1] != '\n' {
				t.Fatalf("not one line: %q", line)
			}
			if !json.Valid(line) || !utf8.Valid(line) {
				t.Fatalf("not valid JSON: %q", line)
			}
			b64 := base64.StdEncoding.EncodeToString([]byte(c.raw))
			if want := `,"record":` + c.record + `,"record_base64":"` + b64 + `"}` + "\n"; !bytes.HasSuffix(line, []byte(want)) {
				t.Fatalf("line %s\nwant suffix %s", line, want)
			}
			var got struct {
				ID           string          `json:"id"`
				Record       json.RawMessage `json:"record"`
				RecordBase64 []byte          `json:"record_base64"`
			}
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatal(err)
			}
			if got.ID != e.ID || string(got.RecordBase64) != c.raw {
				t.Fatalf("decoded %+v", got)
			}
			if plain := e.Size() - len(`,"record_base64":""`) - len(b64); plain != len(e.Record)+230+len("dns")+len("acme") {
				t.Fatalf("size %d does not count the original", e.Size())
			}
		})
	}
}

func TestFlawNamesAreStable(t *testing.T) {
	for _, c := range []struct {
		name string
		f    Flaw
		want string
	}{
		{"no flaw is none", 0, "none"},
		{"one flaw is its name", FlawNotJSON, "not_json"},
		{"flaws are joined in bit order", FlawTimeOutOfRange | FlawInvalidUTF8, "invalid_utf8|time_out_of_range"},
		{"every time flaw is named", FlawTime, "time_missing|time_unreadable|time_out_of_range"},
		{"an unknown bit is shown in hex", FlawTimeMissing | 0x80, "time_missing|flaw(0x80)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.f.String(); got != c.want {
				t.Fatalf("%d: %q, want %q", uint8(c.f), got, c.want)
			}
		})
	}
}

// FuzzBuild holds Build's promise for any bytes: it never panics and never
// fails; the record it delivers is valid JSON and UTF-8; the line
// AppendNDJSON writes is one valid JSON line carrying the original when
// there is one; the id is that of ID, or the 0xFF id for what is no JSON.
func FuzzBuild(f *testing.F) {
	for _, s := range []string{`{"t":"2026-11-20T10:00:00.123Z","a":[1,2.5]}`, `{"t":1e300}`, `{"t":"NaN"}`, `{"t":null}`,
		"{\"t\":0,\"s\":\"\xff\"}", "{\"t\":\"\xff\"}", `{"t":0,"s":"\q"}`, `{"t":0`, ``, "{\"t\":0}\n\r", `{"t":0,"t":1}`,
		`[{"t":0}]`, `{"t":"0001-01-01"}`} {
		f.Add([]byte(s))
	}
	start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var b Builder
		e, flaw := b.Build("dns", "acme", "t", start, end, end, raw)
		if len(e.ID) != IDLen {
			t.Fatalf("id %q", e.ID)
		}
		if !json.Valid(e.Record) || !utf8.Valid(e.Record) {
			t.Fatalf("record %q (flaw %v) is not valid JSON", e.Record, flaw)
		}
		if flaw&FlawInvalidUTF8 != 0 && flaw&FlawNotJSON != 0 {
			t.Fatalf("flaw %v", flaw)
		}
		if (e.Original != nil) != (flaw&(FlawInvalidUTF8|FlawNotJSON) != 0) {
			t.Fatalf("original %q with flaw %v", e.Original, flaw)
		}
		if flaw&(FlawTime|FlawNotJSON) != 0 && !e.Time.Equal(start) {
			t.Fatalf("time %v with flaw %v", e.Time, flaw)
		}
		id, err := ID("dns", raw)
		if (err != nil) != (flaw&FlawNotJSON != 0) {
			t.Fatalf("ID error %v with flaw %v", err, flaw)
		}
		if err == nil && id != e.ID {
			t.Fatalf("id %s, ID %s", e.ID, id)
		}
		line := e.AppendNDJSON(nil)
		if bytes.IndexByte(line, '\n') != len(line)-1 || !json.Valid(line) || !utf8.Valid(line) {
			t.Fatalf("not one valid JSON line: %q", line)
		}
		var got struct {
			RecordBase64 *string `json:"record_base64"`
		}
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatal(err)
		}
		if (got.RecordBase64 != nil) != (e.Original != nil) ||
			(got.RecordBase64 != nil && *got.RecordBase64 != base64.StdEncoding.EncodeToString(raw)) {
			t.Fatalf("record_base64 %v for original %q", got.RecordBase64, e.Original)
		}
	})
}
