package kafka_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// benchPages builds n pages of size records that look like DNS activity:
// about 450 bytes each, repetitive field names, varied values.
func benchPages(b *testing.B, n, size int) []*record.Batch {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	hosts := []string{"login.example.com", "cdn.static.example.net", "api.internal.corp", "updates.vendor.io", "mail.example.org"}
	var bld record.Builder
	pages := make([]*record.Batch, n)
	for p := range pages {
		acct := fmt.Sprintf("account-%02d", p%8)
		pg := &record.Batch{Source: "dns", Account: acct, WindowStart: testWindowStart, WindowEnd: testWindowEnd, Page: p}
		for i := range size {
			ts := testWindowStart.Add(time.Duration(rng.Int64N(int64(time.Hour))))
			raw := fmt.Appendf(nil, `{"id":"%016x","createdTime":"%s","agentId":"%08x-%04x","deviceName":"WS-%05d","userName":"user%04d@corp.example","query":"%s","queryType":"%s","responseCode":"NOERROR","resolvedIps":["10.%d.%d.%d","172.16.%d.%d"],"processName":"C:\\Program Files\\App%d\\app.exe","processId":%d,"ttl":%d,"seq":%d}`,
				rng.Uint64(), ts.Format(time.RFC3339Nano), rng.Uint32(), rng.IntN(1<<16), rng.IntN(100000), rng.IntN(10000),
				hosts[rng.IntN(len(hosts))], []string{"A", "AAAA", "CNAME", "TXT"}[rng.IntN(4)],
				rng.IntN(256), rng.IntN(256), rng.IntN(256), rng.IntN(256), rng.IntN(256), rng.IntN(50), rng.IntN(65536), rng.IntN(86400), p*size+i)
			e, flaw := bld.Build("dns", acct, "createdTime", testWindowStart, testWindowEnd, testFetchedAt, raw)
			if flaw != 0 {
				b.Fatal(flaw)
			}
			pg.Envelopes = append(pg.Envelopes, e)
		}
		pages[p] = pg
	}
	return pages
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWrite measures the sink as the pipeline drives it: four workers
// each writing pages of 5,000 records (the API's page size). One iteration
// is one page. It reports records/s, CPU seconds per million records and
// records per CPU-second (per core) of this process: with the in-process
// broker that includes kfake's own work; against the standalone broker
// (KAFKA_BENCH_BROKERS=127.0.0.1:19092, started with
// "kafkabroker --blackhole --seed-topics svc.dns:3") it is the collector's
// side alone.
//
//	go test -run '^$' -bench Write -benchtime 40x ./internal/sink/kafka/
func BenchmarkWrite(b *testing.B) {
	pages := benchPages(b, 16, 5000)
	configs := []struct {
		name   string
		change func(*kafka.Config)
	}{
		{"default", func(*kafka.Config) {}},
		{"linger=0", func(c *kafka.Config) { c.Linger = 0 }},
		{"linger=50ms", func(c *kafka.Config) { c.Linger = 50 * time.Millisecond }},
		{"batch=256KiB", func(c *kafka.Config) { c.BatchMaxBytes = 256 << 10 }},
		{"batch=4MiB", func(c *kafka.Config) { c.BatchMaxBytes = 4 << 20; c.MaxBufferedBytes = 256 << 20 }},
		{"lz4", func(c *kafka.Config) { c.Compression = "lz4" }},
		{"snappy", func(c *kafka.Config) { c.Compression = "snappy" }},
		{"gzip", func(c *kafka.Config) { c.Compression = "gzip" }},
		{"none", func(c *kafka.Config) { c.Compression = "none" }},
		{"format=record", func(c *kafka.Config) { c.Format = kafka.FormatRecord }},
		{"partitioner=account", func(c *kafka.Config) { c.Partitioner = kafka.PartitionByAccount }},
		// One transaction per Write (4 Writers take turns: one open
		// transaction per producer).
		{"transactional", func(c *kafka.Config) { c.TransactionalID = "bench" }},
	}
	targets := []struct {
		name    string
		brokers func(b *testing.B) []string
	}{
		{"inproc", func(b *testing.B) []string {
			c := kafkatest.NewCluster(b, kfake.BlackholeProduce(), kfake.SeedTopics(3, "svc.dns"))
			return c.ListenAddrs()
		}},
		{"loopback", func(b *testing.B) []string {
			addrs := os.Getenv("KAFKA_BENCH_BROKERS")
			if addrs == "" {
				b.Skip("KAFKA_BENCH_BROKERS not set (start cmd/kafkabroker --blackhole --seed-topics svc.dns:3)")
			}
			return strings.Split(addrs, ",")
		}},
	}
	for _, tg := range targets {
		for _, cf := range configs {
			b.Run(tg.name+"/"+cf.name, func(b *testing.B) {
				cfg := kafka.DefaultConfig()
				cfg.Brokers = tg.brokers(b)
				cf.change(&cfg)
				var streams []record.Stream
				for _, p := range pages[:8] {
					streams = append(streams, record.Stream{Source: p.Source, Account: p.Account})
				}
				reg := prometheus.NewRegistry()
				s, _ := startSink(b, cfg, streams, reg)
				ctx := context.Background()
				write(b, s, pages[0]) // warm up: metadata, producer id

				work := make(chan *record.Batch)
				var wg sync.WaitGroup
				var failed sync.Once
				for range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for p := range work {
							if err := s.Write(ctx, p); err != nil {
								failed.Do(func() { b.Error(err) })
							}
						}
					}()
				}
				cpu0 := cpuTime()
				b.ResetTimer()
				start := time.Now()
				for i := range b.N {
					work <- pages[i%len(pages)]
				}
				close(work)
				wg.Wait()
				elapsed := time.Since(start)
				cpu := cpuTime() - cpu0
				b.StopTimer()
				recs := float64(b.N * 5000)
				b.ReportMetric(recs/elapsed.Seconds(), "rows/s")
				b.ReportMetric(cpu.Seconds()/recs*1e6, "cpu-s/Mrows")
				b.ReportMetric(recs/cpu.Seconds(), "rows/cpu-s")
				b.ReportMetric(0, "ns/op")
				m := gather(b, reg)
				b.ReportMetric(m[`collector_kafka_bytes_produced_total{}`]/(recs+5000), "wire-B/row")
			})
		}
	}
}
