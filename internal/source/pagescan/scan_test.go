package pagescan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/svcexport/collector/internal/api"
)

func TestClassifyPage_C3_C5(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		paging    bool
		total     int64
		next      string
		records   int
		malformed bool // the error wraps api.ErrMalformedPage (retry reason "malformed")
		wantError bool
	}{
		{name: "a paged answer gives its records, count and next page",
			body:   `{"paging":{"rows":2,"totalRows":7,"urls":{"nextPage":"https://x/n?t=1"}},"data":[{"a":1},{"b":2}],"extra":{"x":[1]}}`,
			paging: true, total: 7, next: "https://x/n?t=1", records: 2},
		{name: "the last page has a null next page",
			body:   `{"paging":{"rows":1,"totalRows":1,"urls":{"nextPage":null}},"data":[{"a":1}]}`,
			paging: true, total: 1, records: 1},
		{name: "an answer without paging is one page with all rows (audit logs)",
			body: `{"data":[{"a":1},{"a":2},{"a":3}]}`, records: 3},
		{name: "a null paging is no paging", body: `{"paging":null,"data":[{"a":1}]}`, records: 1},
		{name: "an empty data array is an empty page", body: `{"paging":{"rows":0,"totalRows":0,"urls":{}},"data":[]}`, paging: true},
		{name: "a 204 without body is an empty result", status: 204, body: ``},
		{name: "a 204 is an empty result whatever its body", status: 204, body: `junk`},
		{name: "an empty 200 is not an empty result", body: ``, wantError: true, malformed: true},
		{name: "a blank 200 is not an empty result", body: " \n", wantError: true, malformed: true},
		{name: "an empty object is not an empty result", body: `{}`, wantError: true, malformed: true},
		{name: "null data is not an empty result", body: `{"data":null,"paging":{"rows":0,"totalRows":0,"urls":{}}}`, wantError: true, malformed: true},
		{name: "a missing data member is an error", body: `{"paging":{"rows":0,"totalRows":0},"datum":[]}`, wantError: true, malformed: true},
		{name: "data that is an object is an error", body: `{"data":{"a":1}}`, wantError: true, malformed: true},
		{name: "data given twice is an error", body: `{"data":[{"a":1}],"data":[{"b":2}]}`, wantError: true, malformed: true},
		{name: "a record that is not an object is an error", body: `{"data":[{"a":1},1]}`, wantError: true, malformed: true},
		{name: "paging that is not an object is an error", body: `{"paging":[1],"data":[]}`, wantError: true, malformed: true},
		{name: "negative totalRows is an error", body: `{"paging":{"rows":0,"totalRows":-1},"data":[]}`, wantError: true, malformed: true},
		{name: "negative rows is an error", body: `{"paging":{"rows":-5,"totalRows":1},"data":[]}`, wantError: true, malformed: true},
		{name: "a nextPage that is not a string is an error", body: `{"paging":{"rows":0,"urls":{"nextPage":7}},"data":[]}`, wantError: true, malformed: true},
		{name: "a top-level array is an error", body: `[{"a":1}]`, wantError: true, malformed: true},
		{name: "a 202 is not a result", status: 202, body: `{"data":[]}`, wantError: true, malformed: true},
		{name: "a 206 is not a result", status: 206, body: `{"data":[{"a":1}]}`, wantError: true, malformed: true},
		{name: "a cut-off body is an error", body: `{"paging":{"rows":2},"data":[{"a":1},{"b"`, wantError: true},
		{name: "a cut-off body is cut off even after a shape problem", body: `{"data":null,"paging":{`, wantError: true},
		{name: "HTML is an error", body: `<html>oops</html>`, wantError: true},
		{name: "trailing garbage is an error", body: `{"data":[]} x`, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := tt.status
			if status == 0 {
				status = 200
			}
			p, err := Classify(status, []byte(tt.body), "data")
			if (err != nil) != tt.wantError {
				t.Fatalf("err = %v, want error %v", err, tt.wantError)
			}
			if got := errors.Is(err, api.ErrMalformedPage); got != tt.malformed {
				t.Fatalf("err = %v: malformed %v, want %v", err, got, tt.malformed)
			}
			if err != nil {
				if len(p.Records) != 0 || p.HasPaging {
					t.Fatalf("an error with a page: %+v", p)
				}
				return
			}
			if p.HasPaging != tt.paging || p.TotalRows != tt.total || p.Next != tt.next || len(p.Records) != tt.records {
				t.Fatalf("got %+v", p)
			}
		})
	}
}

func TestParsePage_EdgeDataKey_C6(t *testing.T) {
	p, err := Parse([]byte(`{"alerts":[{"uuid":"a"}],"data":[{"x":1},{"y":2}]}`), "alerts")
	if err != nil || len(p.Records) != 1 || p.HasPaging {
		t.Fatalf("p = %+v err = %v", p, err)
	}
}

// FuzzParsePage fuzzes the page classifier (C3, C5): it never panics; a
// page it accepts is a JSON object (when valid JSON, encoding/json reads
// the same records), re-encodes to the same records and paging, and is no
// longer accepted once cut; a well-formed page is never refused.
func FuzzParsePage(f *testing.F) {
	f.Add([]byte(`{"paging":{"rows":2,"totalRows":7,"urls":{"nextPage":"u"}},"data":[{"a":1}]}`))
	f.Add([]byte(`{"data":[{"a":1}`))
	f.Add([]byte(``))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"data":null}`))
	f.Add([]byte(`{"paging":null,"data":[]}`))
	f.Add([]byte(`{"paging":{"rows":-1},"data":[{"a":[1,{"b":"\u00e9"}]}]}`))
	f.Add([]byte(`[{"data":[]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b, "data")
		if err != nil {
			if len(p.Records) != 0 || p.HasPaging || p.Next != "" {
				t.Fatalf("refused page %q came with content %+v", b, p)
			}
		} else {
			checkAccepted(t, b, p)
		}
		// A well-formed page is never refused: one object, one data
		// member holding an array of objects, no paging (escaped member
		// names are left out: encoding/json unescapes them, so a second
		// data member could hide behind one).
		var top map[string]json.RawMessage
		if json.Valid(b) && json.Unmarshal(b, &top) == nil && top != nil && bytes.IndexByte(b, '\\') < 0 &&
			bytes.Count(b, []byte(`"data"`)) == 1 && !bytes.Contains(b, []byte(`"paging"`)) {
			var recs []map[string]json.RawMessage
			if d, ok := top["data"]; ok && json.Unmarshal(d, &recs) == nil && recs != nil && !slicesContainNil(recs) && err != nil {
				t.Fatalf("well-formed page %q refused: %v", b, err)
			}
		}
		// A page cut anywhere before its end is never accepted (C5).
		if err == nil && len(b) > 1 {
			cut := bytes.TrimSpace(b)
			if _, err := Parse(cut[:len(cut)-1], "data"); err == nil {
				t.Fatalf("cut page %q accepted", cut[:len(cut)-1])
			}
		}
	})
}

func slicesContainNil(recs []map[string]json.RawMessage) bool {
	for _, r := range recs {
		if r == nil {
			return true
		}
	}
	return false
}

// checkAccepted checks a page parsePage accepted from b.
func checkAccepted(t *testing.T, b []byte, p Body) {
	t.Helper()
	for _, r := range p.Records {
		if len(r) == 0 || r[0] != '{' || r[len(r)-1] != '}' {
			t.Fatalf("record %q accepted", r)
		}
	}
	if p.Rows < 0 || p.TotalRows < 0 {
		t.Fatalf("negative paging accepted: %+v", p)
	}
	// When the body is valid JSON, encoding/json reads the same records.
	if json.Valid(b) {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatalf("accepted page %q is not an object: %v", b, err)
		}
		var ref []json.RawMessage
		if err := json.Unmarshal(top["data"], &ref); err != nil || ref == nil {
			t.Fatalf("accepted page %q: data is not an array: %v", b, err)
		}
		if len(ref) != len(p.Records) {
			t.Fatalf("%q: %d records, encoding/json %d", b, len(p.Records), len(ref))
		}
		for i := range ref {
			var x, y bytes.Buffer
			if json.Compact(&x, ref[i]) != nil || json.Compact(&y, p.Records[i]) != nil || !bytes.Equal(x.Bytes(), y.Bytes()) {
				t.Fatalf("%q: record %d is %q, encoding/json %q", b, i, p.Records[i], ref[i])
			}
		}
	}
	// Re-encoded, the page reads the same: records byte for byte, paging.
	var enc bytes.Buffer
	enc.WriteByte('{')
	if p.HasPaging {
		next, _ := json.Marshal(p.Next)
		fmt.Fprintf(&enc, `"paging":{"rows":%d,"totalRows":%d,"urls":{"nextPage":%s}},`, p.Rows, p.TotalRows, next)
	}
	enc.WriteString(`"data":[`)
	for i, r := range p.Records {
		if i > 0 {
			enc.WriteByte(',')
		}
		enc.Write(r)
	}
	enc.WriteString("]}")
	q, err := Parse(enc.Bytes(), "data")
	if err != nil {
		t.Fatalf("re-encoded page %q refused: %v", enc.Bytes(), err)
	}
	if q.HasPaging != p.HasPaging || q.Rows != p.Rows || q.TotalRows != p.TotalRows || q.Next != p.Next || len(q.Records) != len(p.Records) {
		t.Fatalf("re-encoded page reads %+v, want %+v", q, p)
	}
	for i := range p.Records {
		if !bytes.Equal(q.Records[i], p.Records[i]) {
			t.Fatalf("re-encoded record %d is %q, want %q", i, q.Records[i], p.Records[i])
		}
	}
}
