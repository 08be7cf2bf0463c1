package bench

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// memRate is rows per hour of each of the two dense sources of
// BenchmarkMemory: a day of both holds about a million rows (whole days, so
// that the simulator's daily wave averages out).
const memRate = 1_000_000.0 / (2 * 24)

// BenchmarkMemory reports the peak RSS of the collector process (VmHWM,
// sampled from /proc while it runs; see harness.Run.MaxRSS for why not wait4's
// ru_maxrss, which it logs too) for a backlog of about 1 million and about 10 million
// rows: `collector run --once` over dns and connections of one account at
// memRate rows per hour each (no bursts), 1 day or 10 days back, with
// a budget too large to ever wait, into the file sink with fsync off (a
// temporary directory, removed after the run), pipeline.buffer_records at
// its default (50,000). The pipeline is bounded in records, so both peaks
// should be about the same. The first window of each stream (unknown
// density, as long as the backlog up to 7 days) reports totalRows over the
// 500,000-row cap and is split (C3): expected.
//
// rss-1st-half-MiB and rss-2nd-half-MiB are the largest VmRSS samples
// (every 200 ms) of the first and second half of the run: flat memory has
// them close.
//
// rows=10M takes minutes and runs only with -long:
//
//	go test -run '^$' -bench 'Memory/rows=10M' -benchtime 1x ./internal/bench/ -args -long
func BenchmarkMemory(b *testing.B) {
	for _, c := range []struct {
		name string
		span time.Duration
		long bool
	}{
		{"rows=1M", 24 * time.Hour, false},
		{"rows=10M", 240 * time.Hour, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.long && !*long {
				b.Skip("takes minutes: add -args -long (see the package doc)")
			}
			for range b.N {
				sim := harness.StartSim(b, func(cfg *apisim.Config) {
					cfg.RateLimit = 1_000_000
					cfg.Rates = map[string]float64{"dns": memRate, "connections": memRate}
					cfg.BurstProbability = 0
				})
				col := harness.New(b, harness.Config{Sim: sim, Accounts: []string{"acme"}, Sources: []string{"dns", "connections"},
					Start:   time.Now().UTC().Add(-c.span - 2*time.Minute).Truncate(time.Minute),
					NoFsync: true, Rate: harness.Rate{Limit: 1_000_000, Period: time.Hour},
					Metrics: harness.FreeAddr(b), Scrape: scrapedGauges})
				res := col.RunOnce(b, 2*time.Hour)
				peak, rows := res.PeakRSS(b), res.DoneRows(b)
				b.StopTimer()
				os.RemoveAll(col.OutDir())
				want, _ := col.TruthRows(b)
				if rows != want {
					b.Fatalf("delivered %d rows, the simulator holds %d for the committed windows", rows, want)
				}
				st := sim.Stats()
				served := st.Get("sim-admin", "dns").RowsServed + st.Get("sim-admin", "connections").RowsServed
				reqs := st.Get("sim-admin", "dns").Requests + st.Get("sim-admin", "connections").Requests
				first, second := halves(res.RSS)
				b.Logf("%d rows (%d served in %d requests, %d split logs) in %v wall, %v user + %v sys CPU; peak RSS (VmHWM) %.1f MiB, VmRSS max %.1f / %.1f MiB in the first / second half (%d samples); wait4 ru_maxrss %.1f MiB with this process's own peak at %.1f MiB when it started the collector; %s",
					rows, served, reqs, harness.CountLogs(res.Logs, "window too large, split"), res.Wall.Round(time.Millisecond),
					res.User.Round(time.Millisecond), res.Sys.Round(time.Millisecond), mib(peak), mib(first), mib(second), len(res.RSS),
					mib(res.RuMaxRSS), mib(res.ParentHWM), harness.LoadNote())
				rss := make([]float64, len(res.RSS))
				for i, v := range res.RSS {
					rss[i] = float64(v)
				}
				b.Logf("per tenth of the run, largest sample in MiB: VmRSS %s; heap in use %s; Go sys %s; next GC %s; goroutines %s; buffered records %s",
					tenths(rss, 1<<20), tenths(res.Scraped["go_memstats_heap_inuse_bytes"], 1<<20), tenths(res.Scraped["go_memstats_sys_bytes"], 1<<20),
					tenths(res.Scraped["go_memstats_next_gc_bytes"], 1<<20), tenths(res.Scraped["go_goroutines"], 1), tenths(res.Scraped["collector_pipeline_buffered_records"], 1))
				b.ReportMetric(mib(peak), "maxRSS-MiB")
				b.ReportMetric(mib(first), "rss-1st-half-MiB")
				b.ReportMetric(mib(second), "rss-2nd-half-MiB")
				b.ReportMetric(float64(rows), "rows")
				b.ReportMetric(float64(rows)/res.Wall.Seconds(), "rows/s")
				b.ReportMetric(float64(rows)/res.CPU().Seconds(), "rows/cpu-s")
				b.ReportMetric(harness.LoadAvg1(), "load1")
				sim.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkMemoryStreams reports the collector's peak RSS (VmHWM) against
// the number of streams at one backlog per stream: the seven core sources
// of 1, 4 and 8 accounts (7, 28 and 56 pollers), 2 hours of 10,000 rows an
// hour each (four 5,000-row pages per stream), generous budget, file sink
// with fsync off, pipeline.buffer_records at its default. The buffer bounds
// the records between the pollers and the sink, but each poller also holds
// the page it is turning into envelopes and the next page it prefetched
// (DESIGN item 2) while it waits for room: that memory grows with the
// number of streams, not with the backlog.
func BenchmarkMemoryStreams(b *testing.B) {
	for _, n := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("accounts=%d", n), func(b *testing.B) {
			accounts := []string{"acme", "acme-dev"}
			for i := 3; i <= n; i++ {
				accounts = append(accounts, fmt.Sprintf("acct%d", i))
			}
			accounts = accounts[:n]
			for range b.N {
				sim := harness.StartSim(b, func(cfg *apisim.Config) {
					cfg.Accounts = append([]string{"acme", "acme-dev"}, accounts[min(n, 2):]...)
					cfg.RateLimit = 1_000_000
					cfg.Rates = map[string]float64{}
					for _, s := range harness.CoreSources() {
						cfg.Rates[s] = 10_000
					}
					cfg.BurstProbability = 0
				})
				col := harness.New(b, harness.Config{Sim: sim, Accounts: accounts, Sources: harness.CoreSources(),
					Start:   time.Now().UTC().Add(-2*time.Hour - 2*time.Minute).Truncate(time.Minute),
					NoFsync: true, Rate: harness.Rate{Limit: 1_000_000, Period: time.Hour}})
				res := col.RunOnce(b, 30*time.Minute)
				peak, rows := res.PeakRSS(b), res.DoneRows(b)
				b.StopTimer()
				os.RemoveAll(col.OutDir())
				want, _ := col.TruthRows(b)
				if rows != want {
					b.Fatalf("delivered %d rows, the simulator holds %d for the committed windows", rows, want)
				}
				streams := len(accounts) * len(harness.CoreSources())
				b.Logf("%d streams, %d rows in %v wall, %v CPU; peak RSS (VmHWM) %.1f MiB; %s",
					streams, rows, res.Wall.Round(time.Millisecond), res.CPU().Round(time.Millisecond), mib(peak), harness.LoadNote())
				b.ReportMetric(mib(peak), "maxRSS-MiB")
				b.ReportMetric(float64(streams), "streams")
				b.ReportMetric(float64(rows), "rows")
				b.ReportMetric(harness.LoadAvg1(), "load1")
				sim.Close()
				b.StartTimer()
			}
		})
	}
}

// scrapedGauges are the series BenchmarkMemory samples from /metrics.
var scrapedGauges = []string{
	"go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes",
	"go_memstats_next_gc_bytes", "go_goroutines", "collector_pipeline_buffered_records",
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// tenths formats the largest sample of each tenth of s, divided by unit.
func tenths(s []float64, unit float64) string {
	if len(s) == 0 {
		return "[]"
	}
	parts := make([]string, 0, 10)
	for i := range 10 {
		lo, hi := i*len(s)/10, (i+1)*len(s)/10
		if hi <= lo {
			continue
		}
		parts = append(parts, strconv.FormatFloat(slices.Max(s[lo:hi])/unit, 'f', 0, 64))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// halves returns the largest sample of the first and of the second half.
func halves(s []int64) (int64, int64) {
	if len(s) < 2 {
		m := int64(0)
		if len(s) == 1 {
			m = s[0]
		}
		return m, m
	}
	h := len(s) / 2
	return slices.Max(s[:h]), slices.Max(s[h:])
}
