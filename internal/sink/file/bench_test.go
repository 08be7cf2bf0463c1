package file

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

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

// BenchmarkWriteFormats writes the simulator's records of all nine sources
// (ocsftest.Envelopes, repeated into one 5,000-record batch per source)
// with format envelope, ocsf and ocsf with raw_data, fsync off so that it
// measures the sink's CPU (encoding, mapping, writing) rather than the
// disk. It reports records per second and records per CPU-second of the
// process (getrusage), and the bytes written per record.
func BenchmarkWriteFormats(b *testing.B) {
	const perBatch = 5000
	var batches []*record.Batch
	for _, src := range ocsfBatches(b) {
		if len(batches) > 0 && batches[len(batches)-1].Source == src.Source {
			continue // one account per source is enough
		}
		bt := &record.Batch{Source: src.Source, Account: src.Account, WindowStart: src.WindowStart, WindowEnd: src.WindowEnd}
		for i := range perBatch {
			bt.Envelopes = append(bt.Envelopes, src.Envelopes[i%len(src.Envelopes)])
		}
		batches = append(batches, bt)
	}
	for _, f := range []struct {
		name    string
		format  string
		rawData bool
	}{{"envelope", FormatEnvelope, false}, {"ocsf", FormatOCSF, false}, {"ocsf+raw_data", FormatOCSF, true}} {
		b.Run(f.name, func(b *testing.B) {
			cfg := testConfig(b.TempDir())
			cfg.Format, cfg.OCSF.RawData, cfg.Fsync = f.format, f.rawData, false // fsync off: benchmark only
			s, reg := startSink(b, cfg)
			cpu0 := processCPU(b)
			n := 0
			for b.Loop() {
				for _, bt := range batches {
					mustWrite(b, s, bt)
				}
				n += len(batches) * perBatch
			}
			cpu := processCPU(b) - cpu0
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(n)/cpu.Seconds(), "records/cpu-s")
			b.ReportMetric(counterValue(b, reg, "collector_sink_bytes_total", nil)/float64(n), "B/record")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// processCPU is the user and system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
