package e2e

import (
	"flag"
	"fmt"

	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

var (
	benchTenants = flag.Int("tenants", 50, "BenchmarkTenantsMemory: how many tenants")
	benchBacklog = flag.Duration("backlog", 6*time.Hour, "BenchmarkTenantsMemory: each tenant's backlog")
	benchIdle    = flag.Duration("idle", time.Minute, "BenchmarkTenantsMemory: the idle window measured")
	benchProcs   = flag.Int("processes", 0, "BenchmarkTenantsMemory: how many one-tenant processes to compare with (0: -tenants)")
)

// BenchmarkTenantsMemory (issue 32): -tenants tenants of one account each
// (acme; the edge sources carry every account of the simulator, C6),
// every source at interval auto (the default: each stream's cadence from
// its tenant's budget, C4), each tenant on its own simulator (QuickRates,
// -backlog of history), collected by one process (tenants:) against one
// process per tenant (the one-tenant form, each on a simulator of the
// same data; -processes of them when fewer fit the machine: the figures
// a tenant compare). For each side:
//
//   - backfill: the peak resident set and the CPU of `run --once` (the N
//     processes run at once; their figures add up);
//
//   - idle: the daemons started on the same checkpoints, once every stream
//     caught up and 20 s more, over -idle: their resident set, their CPU
//     (/proc of the collector processes alone), the CPU of this process
//     apart (the simulators, in process, answering), and the requests the
//     simulators counted (per tenant per hour, against its budget of 480
//     an hour for each functionality);
//
//   - the output against the truth: every tenant's records, up to its
//     streams' last watermarks, complete (count and XOR per day, C8) with
//     no copy, before a figure counts.
//
//     go test -run '^$' -bench TenantsMemory -benchtime 1x -timeout 90m ./internal/e2e/ -args -tenants 50 -backlog 2h
func BenchmarkTenantsMemory(b *testing.B) {
	n := *benchTenants
	start := time.Now().UTC().Add(-*benchBacklog).Truncate(time.Minute)
	accounts := []string{"acme"}
	for range b.N {
		b.StopTimer()
		// One process, n tenants.
		tenants := make([]harness.Tenant, n)
		for i := range tenants {
			tenants[i] = harness.Tenant{Name: fmt.Sprintf("t%02d", i), KeyID: fmt.Sprintf("key-%d", i), Secret: fmt.Sprintf("secret-%d", i), EdgeToken: fmt.Sprintf("edge-%d", i)}
			tenants[i].Sim = harness.StartSim(b, harness.QuickRates, harness.TenantKeys(tenants[i]))
		}
		addr := harness.FreeAddr(b)
		c := harness.New(b, harness.Config{Sim: tenants[0].Sim, Tenants: tenants, Start: start, Accounts: accounts, Interval: harness.Omit,
			Metrics: addr, LogLevel: "warn"})
		run := c.RunOnce(b, 30*time.Minute)
		one := sideFigures{backfillRSS: run.PeakRSS(b), backfillCPU: run.CPU()}
		perTenant := len(harness.AllSources()) // one account: one stream per source (an edge source is one per token)
		sims := make([]*apisim.Server, n)
		for i, tn := range tenants {
			sims[i] = tn.Sim
		}
		one.idle = idleFigures(b, []*harness.Collector{c}, []string{addr}, n*perTenant, sims)
		var rows int64
		wms := c.Watermarks(b)
		for _, tn := range tenants {
			out := harness.ReadFileSink(b, filepath.Join(c.OutDir(), tn.Name))
			rows += harness.CompareWithTruth(b, tn.Sim, out, c.Streams(), start, harness.TenantOnly(wms, tn.Name))
			if d := out.Duplicates(); d != 0 {
				b.Errorf("one process, tenant %s: %d copies", tn.Name, d)
			}
		}

		if b.Failed() {
			b.Fatalf("one process: the output is not complete against the truth: no figure counts")
		}
		logSide(b, n, "one process", one, rows, perTenant)

		// m processes, one tenant each.
		m := n
		if *benchProcs > 0 {
			m = *benchProcs
		}
		sims = make([]*apisim.Server, m)
		cs := make([]*harness.Collector, m)
		addrs := make([]string, m)
		for i := range cs {
			sims[i] = harness.StartSim(b, harness.QuickRates)
			addrs[i] = harness.FreeAddr(b)
			cs[i] = harness.New(b, harness.Config{Sim: sims[i], Start: start, Accounts: accounts, Interval: harness.Omit, Metrics: addrs[i], LogLevel: "warn"})
		}
		runs := make([]*harness.Run, m)
		var wg sync.WaitGroup
		for i := range cs {
			wg.Go(func() { runs[i] = cs[i].RunOnce(b, 30*time.Minute) })
		}
		wg.Wait()
		var many sideFigures
		for _, r := range runs {
			many.backfillRSS += r.PeakRSS(b)
			many.backfillCPU += r.CPU()
		}
		many.idle = idleFigures(b, cs, addrs, perTenant, sims)
		var manyRows int64
		for _, c := range cs {
			out := c.ReadOutput(b)
			manyRows += c.Compare(b, out, c.Streams())
			if d := out.Duplicates(); d != 0 {
				b.Errorf("%s: %d copies", c.OutDir(), d)
			}
		}
		if b.Failed() {
			b.Fatalf("the outputs are not complete against the truth: no figure counts")
		}

		logSide(b, m, fmt.Sprintf("%d processes", m), many, manyRows, perTenant)
		mib := func(v int64) float64 { return float64(v) / (1 << 20) }
		b.ReportMetric(mib(one.backfillRSS)/float64(n), "MiB-backfill-a-tenant-one-process")
		b.ReportMetric(mib(many.backfillRSS)/float64(m), "MiB-backfill-a-tenant-n-processes")
		b.ReportMetric(mib(one.idle.rss)/float64(n), "MiB-idle-a-tenant-one-process")
		b.ReportMetric(mib(many.idle.rss)/float64(m), "MiB-idle-a-tenant-n-processes")
		b.ReportMetric(one.idle.cores()/float64(n), "cores-idle-a-tenant-one-process")
		b.ReportMetric(many.idle.cores()/float64(m), "cores-idle-a-tenant-n-processes")
		b.Logf("%s", harness.LoadNote())
	}
}

// logSide logs the figures f of n tenants collected as side.
func logSide(b *testing.B, n int, side string, f sideFigures, rows int64, perTenant int) {
	b.Helper()
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	i := f.idle
	b.Logf("%d tenants in %s, %d records (complete, 0 copies): backfill peak RSS %.0f MiB (%.1f MiB a tenant), CPU %.1f s (%.2f s a tenant); "+
		"idle over %v: RSS %.0f MiB (%.1f MiB a tenant), collector CPU %.3f cores (%.1f ms a tenant a second), simulators' %.3f cores; "+
		"%d requests (%.0f an hour a tenant, %.1f an hour a stream; budget 480 an hour a functionality), %.1f ms of collector CPU a request; %s",
		n, side, rows, mib(f.backfillRSS), mib(f.backfillRSS)/float64(n), f.backfillCPU.Seconds(), f.backfillCPU.Seconds()/float64(n),
		i.window, mib(i.rss), mib(i.rss)/float64(n), i.cores(), 1000*i.cores()/float64(n), i.simCores(),
		i.requests, float64(i.requests)/float64(n)/i.window.Hours(), float64(i.requests)/float64(n*perTenant)/i.window.Hours(),
		float64(i.cpu.Milliseconds())/float64(max(i.requests, 1)), harness.LoadNote())
}

// sideFigures are one side's figures: one process of n tenants, or n
// processes of one.
type sideFigures struct {
	backfillRSS int64
	backfillCPU time.Duration
	idle        idle
}

// idle is what collectors cost caught up, over window.
type idle struct {
	window time.Duration
	// rss is the sum of their resident sets at the end of window.
	rss int64
	// cpu is their CPU time in window (/proc of the collectors alone);
	// simCPU that of this process (the simulators answering them).
	cpu, simCPU time.Duration
	// requests is what the simulators counted in window (every user and
	// functionality, tokens included).
	requests int64
}

func (i idle) cores() float64    { return i.cpu.Seconds() / i.window.Seconds() }
func (i idle) simCores() float64 { return i.simCPU.Seconds() / i.window.Seconds() }

// idleFigures starts the collectors cs as daemons (metrics on addrs),
// waits until each has had perProcess streams caught up, waits 20 s more, and
// measures them over -idle (idle); it stops them. sims are every
// simulator they read.
func idleFigures(b *testing.B, cs []*harness.Collector, addrs []string, perProcess int, sims []*apisim.Server) idle {
	b.Helper()
	ps := make([]*harness.Process, len(cs))
	for i, c := range cs {
		ps[i] = c.Start(b)
	}
	defer func() {
		for _, p := range ps {
			_ = p.Stop(30 * time.Second)
		}
	}()
	for i, p := range ps {
		// Each stream caught up once at least: with hundreds of streams
		// on a busy machine, some are always in the middle of a poll.
		caught := map[record.Stream]bool{}
		harness.WaitState(b, p, addrs[i], 10*time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
			for k, s := range st {
				if s.CaughtUp {
					caught[k] = true
				}
			}
			return len(caught) >= perProcess, fmt.Sprintf("%d of %d streams caught up", len(caught), perProcess)
		})
	}
	time.Sleep(20 * time.Second)
	ticks := func() int64 {
		var sum int64
		for _, p := range ps {
			t, ok := harness.CPUTicks(p.PID())
			if !ok {
				b.Fatalf("no CPU time of collector %d", p.PID())
			}
			sum += t
		}
		return sum
	}
	requests := func() int64 {
		var sum int64
		for _, s := range sims {
			for _, c := range s.Stats().Counters {
				sum += c.Requests
			}
		}
		return sum
	}
	t0, self0, r0, began := ticks(), harness.SelfCPU(), requests(), time.Now()
	time.Sleep(*benchIdle)
	t1, self1, r1, window := ticks(), harness.SelfCPU(), requests(), time.Since(began)
	res := idle{window: window, cpu: time.Duration(t1-t0) * time.Second / harness.TicksPerSecond, simCPU: self1 - self0, requests: r1 - r0}
	for _, p := range ps {
		m, err := harness.ReadProcMem(p.PID())
		if err != nil {
			b.Fatal(err)
		}
		res.rss += m.RSS
	}
	return res
}
