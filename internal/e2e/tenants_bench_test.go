package e2e

import (
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

var benchTenants = flag.Int("tenants", 50, "BenchmarkTenantsMemory: how many tenants")

// BenchmarkTenantsMemory (issue 32): -tenants tenants of one account each
// (acme; the edge sources carry every account of the simulator, C6),
// every source, each on its own simulator (QuickRates, 6 hours of
// backlog), collected by one process (tenants:) against one process per
// tenant (the one-tenant form). For each: the peak resident set and CPU of
// the backfill (run --once; the N processes run at once and their figures
// add up), then the resident set of the daemons idle, 20 s after every
// stream caught up. Each backfill must have written at least every record
// of the tenants' first 6 hours (the simulators' truth) before a figure
// counts.
//
//	go test -run '^$' -bench TenantsMemory -benchtime 1x -timeout 60m ./internal/e2e/ -args -tenants 50
func BenchmarkTenantsMemory(b *testing.B) {
	n := *benchTenants
	start := time.Now().UTC().Add(-6 * time.Hour).Truncate(time.Minute)
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
		c := harness.New(b, harness.Config{Sim: tenants[0].Sim, Tenants: tenants, Start: start, Accounts: accounts, Metrics: addr, LogLevel: "warn"})
		run := c.RunOnce(b, 30*time.Minute)
		oneBackfill, oneCPU := run.PeakRSS(b), run.CPU()
		perTenant := len(harness.AllSources()) // one account: one stream per source (an edge source is one per token)
		oneIdle := idleRSS(b, []*harness.Collector{c}, []string{addr}, n*perTenant)

		// n processes, one tenant each.
		cs := make([]*harness.Collector, n)
		addrs := make([]string, n)
		for i := range cs {
			sim := harness.StartSim(b, harness.QuickRates)
			addrs[i] = harness.FreeAddr(b)
			cs[i] = harness.New(b, harness.Config{Sim: sim, Start: start, Accounts: accounts, Metrics: addrs[i], LogLevel: "warn"})
		}
		runs := make([]*harness.Run, n)
		var wg sync.WaitGroup
		for i := range cs {
			wg.Go(func() { runs[i] = cs[i].RunOnce(b, 30*time.Minute) })
		}
		wg.Wait()
		var manyBackfill int64
		var manyCPU time.Duration
		for _, r := range runs {
			manyBackfill += r.PeakRSS(b)
			manyCPU += r.CPU()
		}
		manyIdle := idleRSS(b, cs, addrs, perTenant)

		var rows int64
		for _, tn := range tenants {
			for _, k := range c.Streams() { // the core sources of acme, the edge sources of every account (C6)
				got, _ := tn.Sim.Truth(k.Source, k.Account, start, start.Add(6*time.Hour))
				rows += got
			}
		}
		// Every record of the first 6 hours reached the files (a lower
		// bound: the backfills ran on to their end).
		oneGot, manyGot := harness.CountLines(b, c.OutDir()), int64(0)
		for _, c := range cs {
			manyGot += harness.CountLines(b, c.OutDir())
		}
		if oneGot < rows || manyGot < rows {
			b.Fatalf("delivered %d records in one process and %d in %d processes; the tenants' first 6 hours hold %d", oneGot, manyGot, n, rows)
		}
		mib := func(v int64) float64 { return float64(v) / (1 << 20) }
		b.ReportMetric(mib(oneBackfill), "MiB-backfill-one-process")
		b.ReportMetric(mib(manyBackfill), "MiB-backfill-n-processes")
		b.ReportMetric(mib(oneIdle), "MiB-idle-one-process")
		b.ReportMetric(mib(manyIdle), "MiB-idle-n-processes")
		b.Logf("%d tenants, %d records of truth in their first 6 hours: backfill peak RSS %.0f MiB and %.1f s CPU in one process, %.0f MiB and %.1f s CPU in %d processes; idle %.0f MiB against %.0f MiB",
			n, rows, mib(oneBackfill), oneCPU.Seconds(), mib(manyBackfill), manyCPU.Seconds(), n, mib(oneIdle), mib(manyIdle))
	}
}

// idleRSS starts the collectors cs as daemons (metrics on addrs), waits
// until each has perProcess streams caught up, waits 20 s more, and
// returns the sum of their resident sets; it stops them.
func idleRSS(b *testing.B, cs []*harness.Collector, addrs []string, perProcess int) int64 {
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
		harness.WaitState(b, p, addrs[i], 10*time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
			caught := 0
			for _, s := range st {
				if s.CaughtUp {
					caught++
				}
			}
			return caught >= perProcess, fmt.Sprintf("%d of %d streams caught up", caught, perProcess)
		})
	}
	time.Sleep(20 * time.Second)
	var sum int64
	for _, p := range ps {
		m, err := harness.ReadProcMem(p.PID())
		if err != nil {
			b.Fatal(err)
		}
		sum += m.RSS
	}
	return sum
}
