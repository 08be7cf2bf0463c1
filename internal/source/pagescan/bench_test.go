package pagescan

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// dnsPage is a page of n DNS records as the core API sends them.
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

// BenchmarkParsePage measures the page scanner alone on a 5,000-row page.
func BenchmarkParsePage(b *testing.B) {
	body := dnsPage(5000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := Parse(body, "data")
		if err != nil || len(p.Records) != 5000 {
			b.Fatal(err, len(p.Records))
		}
	}
	b.ReportMetric(float64(b.N)*5000/b.Elapsed().Seconds(), "rows/s")
}
