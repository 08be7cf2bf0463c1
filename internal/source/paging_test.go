package source

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/window"
)

func TestParsePage_C3(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		paging    bool
		total     int64
		next      string
		records   int
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
		{name: "a 204 without body is an empty result", body: ``},
		{name: "null data is empty", body: `{"data":null,"paging":{"rows":0,"totalRows":0,"urls":{}}}`, paging: true},
		{name: "a cut-off body is an error", body: `{"paging":{"rows":2},"data":[{"a":1},{"b"`, wantError: true},
		{name: "HTML is an error", body: `<html>oops</html>`, wantError: true},
		{name: "trailing garbage is an error", body: `{"data":[]} x`, wantError: true},
		{name: "a record that is not an object is an error", body: `{"data":[1]}`, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parsePage([]byte(tt.body), "data")
			if (err != nil) != tt.wantError {
				t.Fatalf("err = %v, want error %v", err, tt.wantError)
			}
			if err != nil {
				return
			}
			if p.HasPaging != tt.paging || p.TotalRows != tt.total || p.Next != tt.next || len(p.Records) != tt.records {
				t.Fatalf("got %+v", p)
			}
		})
	}
}

func TestParsePage_EdgeDataKey_C6(t *testing.T) {
	p, err := parsePage([]byte(`{"alerts":[{"uuid":"a"}],"data":[{"x":1},{"y":2}]}`), "alerts")
	if err != nil || len(p.Records) != 1 || p.HasPaging {
		t.Fatalf("p = %+v err = %v", p, err)
	}
}

func FuzzParsePage(f *testing.F) {
	f.Add([]byte(`{"paging":{"rows":2,"totalRows":7,"urls":{"nextPage":"u"}},"data":[{"a":1}]}`))
	f.Add([]byte(`{"data":[{"a":1}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parsePage(b, "data")
		if err == nil {
			for _, r := range p.Records {
				if len(r) == 0 || r[0] != '{' {
					t.Fatalf("record %q accepted", r)
				}
			}
		}
		// Whatever encoding/json reads as a page, the scanner reads the
		// same way: same records, byte for byte after compaction.
		var ref struct {
			Data []map[string]json.RawMessage `json:"data"`
		}
		if json.Valid(b) && json.Unmarshal(b, &ref) == nil && bytes.Count(b, []byte(`"data"`)) == 1 {
			if err != nil {
				t.Fatalf("valid page %q refused: %v", b, err)
			}
			if len(p.Records) != len(ref.Data) {
				t.Fatalf("%q: %d records, encoding/json %d", b, len(p.Records), len(ref.Data))
			}
		}
		// A page cut anywhere before its end is never accepted (C5).
		if err == nil && len(b) > 1 && bytes.HasSuffix(bytes.TrimSpace(b), []byte("}")) {
			cut := bytes.TrimSpace(b)
			if _, err := parsePage(cut[:len(cut)-1], "data"); err == nil {
				t.Fatalf("cut page %q accepted", cut[:len(cut)-1])
			}
		}
	})
}

func FuzzParseRateHeaders(f *testing.F) {
	f.Add("480", "12", "7.5")
	f.Fuzz(func(t *testing.T, l, r, s string) {
		h := map[string][]string{"Ratelimit-Limit": {l}, "Ratelimit-Remaining": {r}, "Ratelimit-Reset": {s}}
		got := ParseRateHeaders(h)
		if got.Remaining < 0 || got.Reset < 0 || (got.HasLimit && got.Limit <= 0) {
			t.Fatalf("got %+v", got)
		}
	})
}

func TestParseRateHeaders_C4(t *testing.T) {
	h := map[string][]string{"Ratelimit-Limit": {"480"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"7.5"}}
	got := ParseRateHeaders(h)
	want := RateHeaders{Limit: 480, Remaining: 0, Reset: 7500 * time.Millisecond, HasLimit: true, HasRemaining: true, HasReset: true}
	if got != want {
		t.Fatalf("got %+v want %+v", got, want)
	}
	if got := ParseRateHeaders(map[string][]string{"Ratelimit-Remaining": {"abc"}}); got.Any() {
		t.Fatalf("garbage read as %+v", got)
	}
}

func TestFirstPageURL_C3_C6(t *testing.T) {
	w := window.Window{Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
	dns, _ := LookupSpec(SourceDNS)
	u, body, err := firstPageURL(dns, w, SourceSettings{Filters: []Filter{{Expression: "eq", Field: "fqdn", Value: "x"}}}, EdgeConfig{})
	if err != nil || u != "/api/v2/Activities/DNSs/search" ||
		string(body) != `{"timeFilter":{"startTime":"2026-11-20T00:00:00.000Z","endTime":"2026-11-21T00:00:00.000Z"},"filters":[{"expression":"eq","field":"fqdn","value":"x"}]}` {
		t.Fatalf("dns: %s %s %v", u, body, err)
	}
	ca, _ := LookupSpec(SourceCloudActivities)
	u, body, _ = firstPageURL(ca, w, SourceSettings{}, EdgeConfig{})
	if body != nil || u != "/api/v2/CloudActivities?endTime=2026-11-21T00%3A00%3A00.000Z&startTime=2026-11-20T00%3A00%3A00.000Z" {
		t.Fatalf("cloud activities: %s", u)
	}
	al, _ := LookupSpec(SourceEdgeAlerts)
	u, _, _ = firstPageURL(al, w, SourceSettings{}, EdgeConfig{AlertStatusFilter: "OPEN,CLOSED"})
	if !strings.Contains(u, "start_time=1795132800000") || !strings.Contains(u, "end_time=1795219200000") || !strings.Contains(u, "status_filter=OPEN%2CCLOSED") {
		t.Fatalf("edge alerts: %s", u)
	}
}

func TestBackoff_FullJitterCappedAtMax(t *testing.T) {
	top := func(n int64) int64 { return n - 1 }
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		if got := backoff(time.Second, 10*time.Second, n, top); got != want {
			t.Errorf("attempt %d: max wait %v, want %v", n, got, want)
		}
	}
	if got := backoff(time.Second, 10*time.Second, 3, func(int64) int64 { return 0 }); got != 0 {
		t.Errorf("full jitter may wait 0, got %v", got)
	}
}
