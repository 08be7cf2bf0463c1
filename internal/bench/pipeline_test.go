package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/pipeline"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
	"github.com/svcexport/collector/internal/sink/stdout"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// meter sums rows, wall time and CPU time over a benchmark's iterations
// and reports rows/s and rows per CPU-second ("per core").
type meter struct {
	rows      int64
	wall, cpu time.Duration
}

func (m *meter) report(b *testing.B) {
	b.ReportMetric(float64(m.rows)/m.wall.Seconds(), "rows/s")
	b.ReportMetric(float64(m.rows)/m.cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(m.cpu.Seconds()/float64(m.rows)*1e6, "cpu-s/Mrows")
	b.ReportMetric(harness.LoadAvg1(), "load1")
}

// timed runs f and adds its wall and process CPU time to m.
func (m *meter) timed(f func()) {
	cpu0, t0 := harness.SelfCPU(), time.Now()
	f()
	m.wall += time.Since(t0)
	m.cpu += harness.SelfCPU() - cpu0
}

// BenchmarkPipeline measures the collector's path from page bytes to the
// file sink in this process: recorded simulator answers (see replay) ->
// the source package's client, page parsing and envelope building (C7 ids
// over RFC 8785 canonical JSON) -> the pipeline (bounded buffer, 4 sink
// workers, ordered acks, bbolt checkpoint) -> the file sink. CPU is this
// process's (getrusage), so rows/cpu-s is rows per core-second of the
// collector's own work; the replaying transport adds little (a header
// clone and a reader over the stored body per answer).
//
// The stage=... sub-benchmarks split that cost: fetch+parse+id (the
// pollers alone, pages discarded), id (record.Builder over the raw records:
// canonical JSON, SHA-256, record time), file (the file sink writing the
// same batches, one at a time).
//
// Figures (inprocess/fsync=true|false, 532,197 rows, -benchtime 1x, six
// rounds interleaved with benchstat, on the 2-core machine under a load of
// 16-20 from other builds, so wall figures are noise and only the
// per-CPU-second ones and the allocations compare):
//
//	                  rows/cpu-s           B/op            allocs/op
//	38bfa89           100k / 105k          662 Mi          1.26 M
//	main at 0fbd4a4   73k / 80k (-25 %)    1,685 Mi        1.61-1.62 M
//	after the fixes   102k / 106k (~ 0)    1,079-1,111 Mi  1.60 M
//
// The regression was the delivered set's filter (the source's memory
// putting every key it read of the window, about 3.5 million a run, into a map:
// a window is served in unsorted pages, so each page reads the keys of
// the window's earlier pages) and each ledger sink copying every batch to
// leave out an empty skip set; formatting the envelope's four times with
// time.AppendFormat cost another 6 %. What remained above 38bfa89 in B/op
// was the slice of every key of the window the filter read (about 1.6 GB
// over five runs in the memory profile); a page now asks
// checkpoint.DB.DeliveredOf for counts of its own keys.
func BenchmarkPipeline(b *testing.B) {
	c := sharedCorpus(b)
	b.Logf("corpus: %d rows (%.0f B/record raw) in %d answers, %d non-empty pages; %s",
		c.rows, float64(c.bytes)/float64(c.rows), c.pages, len(c.batches), harness.LoadNote())

	for _, fsync := range []bool{true, false} {
		b.Run(fmt.Sprintf("inprocess/fsync=%v", fsync), func(b *testing.B) {
			var m meter
			for range b.N {
				dir, err := os.MkdirTemp("", "collector-bench-pipeline-")
				if err != nil {
					b.Fatal(err)
				}
				var delivered int64
				m.timed(func() { delivered = runInProcess(b, c, dir, fsync, 1) })
				if delivered != c.rows {
					b.Fatalf("delivered %d rows, the recorded backlog holds %d", delivered, c.rows)
				}
				m.rows += delivered
				os.RemoveAll(dir)
			}
			m.report(b)
		})
	}

	b.Run("stage=fetch+parse+id", func(b *testing.B) {
		var m meter
		for range b.N {
			var rows atomic.Int64
			emit := func(_ context.Context, p cursor.Page) error {
				rows.Add(int64(len(p.Batch.Envelopes)))
				return nil
			}
			rp := c.answers.frozen()
			var err error
			m.timed(func() { err = pollAll(c.srcCfg, rp, c.now, prometheus.NewRegistry(), emit) })
			if err != nil || rp.misses.Load() != 0 || rows.Load() != c.rows {
				b.Fatalf("polled %d rows of %d, %d replay misses: %v", rows.Load(), c.rows, rp.misses.Load(), err)
			}
			m.rows += rows.Load()
		}
		m.report(b)
	})

	b.Run("stage=id", func(b *testing.B) {
		type raw struct {
			source, timeField string
			rec               []byte
		}
		var recs []raw
		for _, bt := range c.batches {
			spec, _ := catalog.LookupSpec(bt.Source)
			for i := range bt.Envelopes {
				recs = append(recs, raw{bt.Source, spec.TimeField, bt.Envelopes[i].Record})
			}
		}
		var m meter
		var bld record.Builder
		w0, w1 := c.now.Add(-time.Hour), c.now
		for range b.N {
			m.timed(func() {
				for _, r := range recs {
					if _, flaw := bld.Build(r.source, "acme", r.timeField, w0, w1, w1, r.rec); flaw != 0 {
						b.Fatal(flaw)
					}
				}
			})
			m.rows += int64(len(recs))
		}
		m.report(b)
	})

	// Every page to every sink: the cost of one, two and three sinks
	// (file; file and file; file, file and stdout into io.Discard), fsync
	// off so that the disk of a shared machine does not blur the CPU.
	for sinks := 1; sinks <= 3; sinks++ {
		b.Run(fmt.Sprintf("inprocess/sinks=%d", sinks), func(b *testing.B) {
			var m meter
			for range b.N {
				dir, err := os.MkdirTemp("", "collector-bench-sinks-")
				if err != nil {
					b.Fatal(err)
				}
				var delivered int64
				m.timed(func() { delivered = runInProcess(b, c, dir, false, sinks) })
				if delivered != c.rows {
					b.Fatalf("delivered %d rows, the recorded backlog holds %d", delivered, c.rows)
				}
				m.rows += delivered
				os.RemoveAll(dir)
			}
			m.report(b)
		})
	}

	for _, fsync := range []bool{true, false} {
		b.Run(fmt.Sprintf("stage=file/fsync=%v", fsync), func(b *testing.B) {
			var m meter
			for range b.N {
				dir, err := os.MkdirTemp("", "collector-bench-file-")
				if err != nil {
					b.Fatal(err)
				}
				cfg := file.DefaultConfig()
				cfg.Dir, cfg.Fsync = dir, fsync
				s, err := file.New(cfg, prometheus.NewRegistry(), nil)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				if err := s.Start(ctx); err != nil {
					b.Fatal(err)
				}
				m.timed(func() {
					for _, bt := range c.batches {
						if err := s.Write(ctx, bt); err != nil {
							b.Fatal(err)
						}
					}
					if err := s.Shutdown(ctx); err != nil {
						b.Fatal(err)
					}
				})
				m.rows += c.rows
				os.RemoveAll(dir)
			}
			m.report(b)
		})
	}
}

// runInProcess runs the whole path once, as internal/app assembles it, into
// a fresh checkpoint and output directory under dir, with sinks sinks (1:
// a file sink; 2: two file sinks; 3: two file sinks and a stdout sink into
// io.Discard; every page goes to every sink); it returns the rows the
// pipeline delivered.
func runInProcess(b *testing.B, c *corpus, dir string, fsync bool, sinks int) int64 {
	b.Helper()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	log := slog.New(slog.DiscardHandler)
	rp := c.answers.frozen()
	set, err := buildSet(c.srcCfg, rp, c.now, reg)
	if err != nil {
		b.Fatal(err)
	}
	store, err := checkpoint.Open(filepath.Join(dir, "data", "checkpoint.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	var targets []pipeline.Target
	for i := range sinks {
		name := fmt.Sprintf("file%d", i)
		var snk sink.Sink
		if i < 2 {
			fcfg := file.DefaultConfig()
			fcfg.Dir, fcfg.Fsync = filepath.Join(dir, "out", name), fsync
			snk, err = file.New(fcfg, sinkhelper.Named(reg, name), log)
		} else {
			name = "stdout"
			snk, err = stdout.New(stdout.DefaultConfig(), io.Discard, sinkhelper.Named(reg, name))
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := snk.Start(ctx); err != nil {
			b.Fatal(err)
		}
		targets = append(targets, pipeline.Target{Name: name, Sink: snk})
	}
	pollers := make([]pipeline.Producer, len(set.Pollers))
	for i, p := range set.Pollers {
		pollers[i] = p
	}
	pl := pipeline.New(pipeline.DefaultConfig(), store, targets, pollers, reg, log, nil)
	if err := pl.Run(ctx); err != nil {
		b.Fatal(err)
	}
	for _, t := range targets {
		if err := t.Sink.Shutdown(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if n := rp.misses.Load(); n != 0 {
		b.Fatalf("%d requests were not in the recording: the run is not the recorded one", n)
	}
	return pl.Delivered()
}

// BenchmarkPipelineBinary runs the collector binary, `run --once`, on a
// fixed backlog: all nine sources of two accounts over the last 6 hours at
// the simulator's default (production-shaped) rates, about 1.1 million
// rows (bursts vary it), with a rate budget too large to ever wait, into
// the file sink with fsync on and off. The simulator runs in the
// benchmark's process; CPU time and rows/cpu-s are the collector process's
// alone (wait4 rusage), its peak RSS is VmHWM (see harness.Run.MaxRSS), rows/s
// is over its wall time from exec to exit (start-up and final commit
// included).
func BenchmarkPipelineBinary(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			var m meter
			var maxRSS int64
			for range b.N {
				sim := harness.StartSim(b, func(c *apisim.Config) { c.RateLimit = 1_000_000 })
				col := harness.New(b, harness.Config{Sim: sim, Sources: harness.AllSources(),
					Start:   time.Now().UTC().Add(-6*time.Hour - 2*time.Minute).Truncate(time.Minute),
					NoFsync: !fsync, Rate: harness.Rate{Limit: 1_000_000, Period: time.Hour}})
				res := col.RunOnce(b, 10*time.Minute)
				peak, rows := res.PeakRSS(b), res.DoneRows(b)
				b.StopTimer()
				want, _ := col.TruthRows(b)
				if rows != want {
					b.Fatalf("delivered %d rows, the simulator holds %d for the committed windows", rows, want)
				}
				os.RemoveAll(col.OutDir())
				sim.Close()
				b.StartTimer()
				m.rows += rows
				m.wall += res.Wall
				m.cpu += res.CPU()
				maxRSS = max(maxRSS, peak)
				b.Logf("%d rows in %v wall, %v user + %v sys CPU, peak RSS (VmHWM) %.0f MiB; %s",
					rows, res.Wall.Round(time.Millisecond), res.User.Round(time.Millisecond), res.Sys.Round(time.Millisecond), mib(peak), harness.LoadNote())
			}
			m.report(b)
			b.ReportMetric(mib(maxRSS), "maxRSS-MiB")
		})
	}
}
