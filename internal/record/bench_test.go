package record

import (
	"testing"
	"time"
)

// BenchmarkBuild measures the per-record cost of a poller: id and time of a
// typical record served with shuffled keys, escapes and a float.
func BenchmarkBuild(b *testing.B) {
	raw := []byte(`{"mid":12345,"createdTime":"2026-11-20T10:00:00.123Z","fqdn":"host-17.example.com","hostIpAddr":"10.1.2.3","ttl":300,"score":0.875,"dnsServerIp":"10.0.0.2","tags":{"owner":"Jos\u00e9 M\u00fcller","env":"prod"},"extra":[1,2.5,3e-7]}`)
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var bld Builder
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		e, _ := bld.Build("dns", "acme", "createdTime", at, at.Add(time.Hour), at, raw)
		if len(e.ID) != IDLen {
			b.Fatal("no id")
		}
	}
}
