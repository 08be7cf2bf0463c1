package bench

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/testinfra/chtest"
	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/harness/kafkaharness"
)

// scale is the fraction of BenchmarkSinkMemory's full-scale backlog; 0
// means 1 with -long and 0.1 without.
var scale = flag.Float64("scale", 0, "BenchmarkSinkMemory's backlog as a fraction of full scale (about 2.5 million records); 0: 1 with -long, else 0.1")

// heapProfiles is where BenchmarkSinkMemory writes, per sink, the heap
// profile of the collector taken when its heap in use was largest; ""
// takes none.
var heapProfiles = flag.String("heapprofiles", "", "BenchmarkSinkMemory: directory for each sink's heap profile at its largest heap in use (metrics.pprof on)")

// sinkMemAccounts are the three accounts of BenchmarkSinkMemory.
var sinkMemAccounts = []string{"acme", "acme-dev", "acme-ops"}

// sinkMemRateFactor scales the simulator's production-shaped default rates
// (about 78,800 rows an hour per account over the nine sources) so that 2
// days of three accounts are about 2.5 million rows at scale 1.
const sinkMemRateFactor = 0.22

// BenchmarkSinkMemory reports the collector's peak RSS (VmHWM, sampled
// from /proc while it runs) and rows per second of a backfill per sink:
// `collector run --once` over 2 days of all nine sources of three accounts
// at the simulator's production-shaped rates times 0.22 times -scale
// (about 2.5 million records at -scale 1, bursts included), a budget too
// large to wait, and the collector's defaults for everything but the
// sink's address:
//
//   - sink=file: NDJSON files into a temporary directory (fsync on, as by
//     default), removed after the run;
//   - sink=kafka: a cmd/kafkabroker (franz-go's kfake) started with
//     --blackhole, which acknowledges produce requests without keeping
//     the records (the producer does the same work; the broker does not
//     hold gigabytes);
//   - sink=clickhouse: a fresh database on the chtest server, native
//     protocol; the rows stored are counted against the truth.
//
// $BENCH_COLLECTOR_ENV adds environment to the collector (KEY=VALUE,
// separated by spaces) to measure other settings, e.g.
// BENCH_COLLECTOR_ENV="COLLECTOR_PIPELINE__BUFFER_RECORDS=20000". Each
// run is checked: the rows delivered must be the simulator's for the
// committed windows. -heapprofiles DIR turns metrics.pprof on and writes
// DIR/<sink>.heap, the heap profile taken (every 2 s) when the heap in use
// was largest (go tool pprof -sample_index=inuse_space).
//
//	go test -run '^$' -bench SinkMemory -benchtime 1x -v ./internal/bench/ -args -scale 1
//	go test -run '^$' -bench 'SinkMemory/sink=kafka' -benchtime 1x -v ./internal/bench/ -args -scale 1 -heapprofiles /tmp/heap
func BenchmarkSinkMemory(b *testing.B) {
	f := *scale
	if f <= 0 {
		f = 0.1
		if *long {
			f = 1
		}
	}
	for _, name := range []string{"file", "kafka", "clickhouse"} {
		b.Run("sink="+name, func(b *testing.B) {
			for range b.N {
				sinkMemOnce(b, name, f)
			}
		})
	}
}

// sinkMemOnce runs one backfill of BenchmarkSinkMemory into sink name.
func sinkMemOnce(b *testing.B, name string, f float64) {
	b.StopTimer()
	defer b.StartTimer()
	sim := harness.StartSim(b, func(cfg *apisim.Config) {
		cfg.Accounts = sinkMemAccounts
		cfg.RateLimit = 1_000_000
		cfg.AlertUpdateWindow = time.Minute // one version of each alert (harness.QuickRates)
		for s, r := range cfg.Rates {
			cfg.Rates[s] = r * sinkMemRateFactor * f
		}
	})
	defer sim.Close()
	start := time.Now().UTC().Add(-48*time.Hour - 2*time.Minute).Truncate(time.Minute)
	var sinkYAML, db string
	var srv *chtest.Server
	switch name {
	case "kafka":
		broker := kafkaharness.StartBroker(b, 0, "--blackhole")
		sinkYAML = kafkaharness.SinkYAML(broker.Addr, "create_topics: true")
	case "clickhouse":
		srv = chtest.Get(b)
		db = srv.NewDatabase(b)
		sinkYAML = fmt.Sprintf("sink:\n  type: clickhouse\n  clickhouse:\n    addr: [%s]\n    database: %s\n", srv.Native, db)
	}
	env, metrics := benchEnv(), harness.FreeAddr(b)
	if *heapProfiles != "" {
		env = append(env, "COLLECTOR_METRICS__PPROF=true")
	}
	col := harness.New(b, harness.Config{Sim: sim, Accounts: sinkMemAccounts, Start: start, Interval: harness.Omit,
		Rate: harness.Rate{Limit: 1_000_000, Period: time.Hour}, Sink: sinkYAML, Env: env,
		Metrics: metrics, Scrape: scrapedGauges})
	stopProfiles := func() {}
	if *heapProfiles != "" {
		stopProfiles = largestHeapProfile(b, metrics, filepath.Join(*heapProfiles, name+".heap"))
	}
	b.StartTimer()
	res := col.RunOnce(b, time.Hour)
	b.StopTimer()
	stopProfiles()
	peak, rows := res.PeakRSS(b), res.DoneRows(b)
	if name == "file" {
		os.RemoveAll(col.OutDir())
	}
	want, _ := col.TruthRows(b)
	if rows != want {
		b.Fatalf("delivered %d rows, the simulator holds %d for the committed windows", rows, want)
	}
	if srv != nil {
		var stored int64
		for _, src := range append(harness.CoreSources(), "edge_audit_events", "edge_alerts") {
			stored += srv.QueryInt(b, fmt.Sprintf("SELECT count() FROM %s.%s FINAL", db, src))
		}
		if stored != want {
			b.Fatalf("%d distinct rows stored in ClickHouse, the simulator holds %d", stored, want)
		}
	}
	first, second := halves(res.RSS)
	b.Logf("sink %s, scale %g: %d rows in %v wall, %v CPU; peak RSS (VmHWM) %.1f MiB, of it anonymous (RssAnon) %.1f MiB; VmRSS max %.1f / %.1f MiB in the first / second half; env %q; %s",
		name, f, rows, res.Wall.Round(time.Millisecond), res.CPU().Round(time.Millisecond), mib(peak), mib(res.MaxAnon), mib(first), mib(second),
		strings.Join(benchEnv(), " "), harness.LoadNote())
	b.Logf("per tenth of the run, largest sample in MiB: heap in use %s; Go sys %s; next GC %s; buffered records %s",
		tenths(res.Scraped["go_memstats_heap_inuse_bytes"], 1<<20), tenths(res.Scraped["go_memstats_sys_bytes"], 1<<20),
		tenths(res.Scraped["go_memstats_next_gc_bytes"], 1<<20), tenths(res.Scraped["collector_pipeline_buffered_records"], 1))
	b.ReportMetric(mib(peak), "maxRSS-MiB")
	b.ReportMetric(mib(res.MaxAnon), "maxAnon-MiB")
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(float64(rows)/res.Wall.Seconds(), "rows/s")
	b.ReportMetric(float64(rows)/res.CPU().Seconds(), "rows/cpu-s")
	b.ReportMetric(harness.LoadAvg1(), "load1")
}

// benchEnv is the environment $BENCH_COLLECTOR_ENV adds to the collector
// of a benchmark (KEY=VALUE, separated by spaces).
func benchEnv() []string { return strings.Fields(os.Getenv("BENCH_COLLECTOR_ENV")) }

// largestHeapProfile fetches the heap profile of the collector serving
// metrics at addr every 2 s and keeps, in path, the one taken when
// go_memstats_heap_inuse_bytes was largest; the function it returns
// stops it and waits.
func largestHeapProfile(b *testing.B, addr, path string) func() {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		c := http.Client{Timeout: 10 * time.Second}
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		largest := 0.0
		for {
			select {
			case <-stop:
				b.Logf("heap profile at %.1f MiB in use: %s", largest/(1<<20), path)
				return
			case <-t.C:
			}
			inuse := harness.ScrapeGauges(addr, "go_memstats_heap_inuse_bytes")["go_memstats_heap_inuse_bytes"]
			if inuse <= largest {
				continue
			}
			res, err := c.Get("http://" + addr + "/debug/pprof/heap")
			if err != nil {
				continue
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK {
				continue
			}
			if os.WriteFile(path, body, 0o644) == nil {
				largest = inuse
			}
		}
	})
	return func() { close(stop); wg.Wait() }
}
