package source

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

// dnsPage returns a page body of n DNS records shaped like the seed's.
func dnsPage(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"paging":{"rows":`)
	fmt.Fprintf(&b, "%d,\"totalRows\":%d,\"urls\":{\"nextPage\":\"https://api.example.test/api/v2/Activities/DNSs/search?page=abc\"}},\"data\":[", n, n*3)
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"createdTime":"%s","mid":%d,"fqdn":"host-%d.example.com","hostIpAddr":"10.0.%d.%d","ttl":300,"dnsServerIp":"10.0.0.2","_ingest":{"lag":%d}}`,
			t0.Add(time.Duration(i)*time.Second).Format("2006-01-02T15:04:05.000Z"), 1000+i%50, i, i%256, i%200, i%90)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// BenchmarkPage measures parsing a 5,000-row page and building its
// envelopes (id over the canonical JSON, lenient time), the CPU work per
// page of a poller.
func BenchmarkPage(b *testing.B) {
	body := dnsPage(5000)
	eb := envelopeBuilder{Source: catalog.SourceDNS, Account: "acme", TimeField: "createdTime"}
	w := window.Window{Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := pagescan.Parse(body, "data")
		if err != nil {
			b.Fatal(err)
		}
		envs, err := eb.Build(p.Records, w, w.End)
		if err != nil || len(envs) != 5000 {
			b.Fatal(err, len(envs))
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/sec, "pages/s")
	b.ReportMetric(float64(b.N)*5000/sec, "rows/s")
}

// A record whose time cannot be read is delivered with the window start as
// its time, counted and logged; it is never dropped (C3: parse leniently).
func TestEnvelopes_BadTimeIsDeliveredNotDropped(t *testing.T) {
	t.Parallel()
	m, _ := NewMetrics(nil)
	eb := envelopeBuilder{Source: catalog.SourceDNS, Account: "acme", TimeField: "createdTime", Metrics: m}
	w := window.Window{Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
	p, err := pagescan.Parse([]byte(`{"data":[{"createdTime":"2026-11-20T10:00:00+0000","a":1},{"createdTime":"yesterday"},{"b":2}]}`), "data")
	if err != nil {
		t.Fatal(err)
	}
	envs, err := eb.Build(p.Records, w, w.End)
	if err != nil || len(envs) != 3 {
		t.Fatalf("envs %d err %v", len(envs), err)
	}
	if !envs[0].Time.Equal(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)) || !envs[1].Time.Equal(w.Start) || !envs[2].Time.Equal(w.Start) {
		t.Fatalf("times %v %v %v", envs[0].Time, envs[1].Time, envs[2].Time)
	}
	for _, e := range envs {
		if len(e.ID) != 64 {
			t.Fatalf("id %q", e.ID)
		}
	}
	for reason, want := range map[string]float64{BadRecordTimeUnreadable: 1, BadRecordTimeMissing: 1, BadRecordNotJSON: 0} {
		if got := testutilValue(m.BadRecords(catalog.SourceDNS, "acme", reason)); got != want {
			t.Errorf("bad records{reason=%q} = %v, want %v", reason, got, want)
		}
	}
}

// BenchmarkParsePage measures the page classifier alone on a 5,000-row
// page: the single pass that validates the body and slices out its records.
