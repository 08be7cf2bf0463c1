package file

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/svcexport/collector/internal/record"
)

// BenchmarkWrite writes 5,000-envelope batches of ~400-byte records (one
// API page) to one stream. MB/s counts NDJSON bytes before compression.
func BenchmarkWrite(b *testing.B) {
	const perBatch = 5000
	batches := []*record.Batch{
		batch(b, "dns", "acme", 0, perBatch),
		batch(b, "dns", "acme", perBatch, perBatch),
	}
	raw := int64(len(encodePlain(batches[0])))
	for _, gz := range []bool{false, true} {
		for _, fsync := range []bool{true, false} {
			b.Run(fmt.Sprintf("gzip=%v/fsync=%v", gz, fsync), func(b *testing.B) {
				cfg := testConfig(b.TempDir())
				cfg.Gzip, cfg.Fsync = gz, fsync // fsync off: benchmark only
				s, reg := startSink(b, cfg)
				b.SetBytes(raw)
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					mustWrite(b, s, batches[n%len(batches)])
					n++
				}
				b.ReportMetric(float64(n*perBatch)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(counterValue(b, reg, "collector_sink_bytes_total", nil)/float64(int64(n)*raw), "disk/raw")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkWriteParallelStreams writes the same batches from 4 goroutines,
// each to its own stream, fsync on.
func BenchmarkWriteParallelStreams(b *testing.B) {
	const perBatch, streams = 5000, 4
	var batches []*record.Batch
	for i := range streams {
		batches = append(batches, batch(b, "dns", fmt.Sprintf("acct%d", i), 0, perBatch))
	}
	raw := int64(len(encodePlain(batches[0])))
	for _, gz := range []bool{false, true} {
		b.Run(fmt.Sprintf("gzip=%v/fsync=true", gz), func(b *testing.B) {
			cfg := testConfig(b.TempDir())
			cfg.Gzip = gz
			s, _ := startSink(b, cfg)
			b.SetBytes(raw * streams)
			n := 0
			for b.Loop() {
				var wg sync.WaitGroup
				for _, bt := range batches {
					wg.Go(func() {
						if err := s.Write(context.Background(), bt); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				n++
			}
			b.ReportMetric(float64(n*perBatch*streams)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
