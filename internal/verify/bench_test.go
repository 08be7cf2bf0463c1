package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// FuzzFileLines feeds arbitrary bytes to the file sink's reader as a plain
// and as a gzip file: it never panics, and what it counts lies in the
// targets.
func FuzzFileLines(f *testing.F) {
	var bld record.Builder
	e, _ := bld.Build("dns", "acme", "createdTime", d0, d0.Add(Day), d0.Add(Day), []byte(`{"createdTime":"2026-11-20T01:00:00Z","x":1}`))
	f.Add(e.AppendNDJSON(nil))
	f.Add([]byte("{\"id\":\"x\",\"time\":\"2026-11-20T01:00:00Z\"}\n{"))
	targets := NewPlan([]StreamInfo{{Stream: dns, Start: d0, State: checkStateAt(d0.Add(Day))}}, Filter{}, Limits{Now: now}).Targets
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		for _, name := range []string{"a.ndjson", "b.ndjson.gz.part"} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
			tl := newTally(targets)
			var err error
			if name == "a.ndjson" {
				err = readPlain(filepath.Join(dir, name), tl)
			} else {
				err = readGzip(filepath.Join(dir, name), tl)
			}
			for k, n := range tl.counts() {
				if k.Stream != dns || !k.Day.Equal(d0) || n < 1 {
					t.Fatalf("counted %d under %v", n, k)
				}
			}
			_ = err // a line that is no envelope is an error, never a panic
		}
	})
}

// BenchmarkFileSinkDelivered reads 100,000 envelopes of one stream from
// plain files: the rate at which verify counts a file sink.
func BenchmarkFileSinkDelivered(b *testing.B) {
	dir := b.TempDir()
	sdir := filepath.Join(dir, "dns", "acme")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		b.Fatal(err)
	}
	var bld record.Builder
	var buf bytes.Buffer
	const n = 100_000
	for i := range n {
		raw := fmt.Appendf(nil, `{"createdTime":"%s","id":%d,"hostName":"ws-%04d.corp.example.com","queryName":"update-%d.googleapis.com","answers":["142.250.74.99"]}`,
			d0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i, i%10000, i)
		e, _ := bld.Build("dns", "acme", "createdTime", d0, d0.Add(2*Day), d0.Add(2*Day), raw)
		buf.Write(e.AppendNDJSON(nil))
	}
	if err := os.WriteFile(filepath.Join(sdir, "dns-acme-x-000001.ndjson"), buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	targets := NewPlan([]StreamInfo{{Stream: dns, Start: d0, State: checkStateAt(d0.Add(2 * Day))}}, Filter{}, Limits{Now: now}).Targets
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		got, err := FileSink{Dir: dir}.Delivered(context.Background(), targets)
		if err != nil || got[Key{dns, d0}]+got[Key{dns, d0.Add(Day)}] != n {
			b.Fatal(got, err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
}
