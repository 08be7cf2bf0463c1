package e2e

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

var (
	pollTenants    = flag.Int("polltenants", 20, "BenchmarkTailingPoll: how many tenants")
	pollBacklog    = flag.Duration("pollbacklog", time.Hour, "BenchmarkTailingPoll: each tenant's backlog")
	pollWindow     = flag.Duration("pollwindow", 110*time.Second, "BenchmarkTailingPoll: the caught-up window measured (and profiled)")
	pollCPUProfile = flag.String("pollprofile", "", "BenchmarkTailingPoll: file for the collector's CPU profile over the window (metrics.pprof on)")
)

// BenchmarkTailingPoll (issue 32's follow-up) measures what a tailing poll
// costs: -polltenants tenants of one account each (nine streams a tenant),
// each on its own simulator (QuickRates, -pollbacklog of history), in one
// collector at the defaults (interval auto, C4: every caught-up stream at
// the 15 s floor). Once every stream caught up and 20 s more, it measures
// the collector's CPU (/proc of its process alone) over -pollwindow and
// the requests the simulators counted (a caught-up poll is one page
// request: the window's re-cover and the new minutes ask together), and
// reports the CPU a request. -pollprofile FILE turns metrics.pprof on
// and keeps the collector's CPU profile over the same window (go tool
// pprof -top FILE). At the defaults (20 tenants, 110 s: a profile must
// fit in the metrics server's 2-minute write timeout) the window holds
// about 5.5 s of CPU samples.
//
//	go test -run '^$' -bench TailingPoll -benchtime 1x -timeout 30m ./internal/e2e/ -args -pollprofile /tmp/poll.pprof
func BenchmarkTailingPoll(b *testing.B) {
	n := *pollTenants
	accounts := []string{"acme"}
	perTenant := len(harness.AllSources())
	for range b.N {
		b.StopTimer()
		start := time.Now().UTC().Add(-*pollBacklog).Truncate(time.Minute)
		tenants := make([]harness.Tenant, n)
		sims := make([]*apisim.Server, n)
		for i := range tenants {
			tenants[i] = harness.Tenant{Name: fmt.Sprintf("t%02d", i), KeyID: fmt.Sprintf("key-%d", i), Secret: fmt.Sprintf("secret-%d", i), EdgeToken: fmt.Sprintf("edge-%d", i)}
			tenants[i].Sim = harness.StartSim(b, harness.QuickRates, harness.TenantKeys(tenants[i]))
			sims[i] = tenants[i].Sim
		}
		addr := harness.FreeAddr(b)
		var env []string
		if *pollCPUProfile != "" {
			env = append(env, "COLLECTOR_METRICS__PPROF=true")
		}
		c := harness.New(b, harness.Config{Sim: tenants[0].Sim, Tenants: tenants, Start: start, Accounts: accounts, Interval: harness.Omit,
			Metrics: addr, LogLevel: "warn", Env: env})
		p := c.Start(b)
		caught := map[record.Stream]bool{}
		harness.WaitState(b, p, addr, 15*time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
			for k, s := range st {
				if s.CaughtUp {
					caught[k] = true
				}
			}
			return len(caught) >= n*perTenant, fmt.Sprintf("%d of %d streams caught up", len(caught), n*perTenant)
		})
		time.Sleep(20 * time.Second)
		requests := func() int64 {
			var sum int64
			for _, s := range sims {
				for _, c := range s.Stats().Counters {
					sum += c.Requests
				}
			}
			return sum
		}
		profiled := make(chan error, 1)
		if *pollCPUProfile != "" {
			go func() { profiled <- cpuProfile(addr, *pollWindow, *pollCPUProfile) }()
		}
		t0, ok0 := harness.CPUTicks(p.PID())
		r0, began := requests(), time.Now()
		b.StartTimer()
		time.Sleep(*pollWindow)
		b.StopTimer()
		t1, ok1 := harness.CPUTicks(p.PID())
		r1, window := requests(), time.Since(began)
		if !ok0 || !ok1 {
			b.Fatalf("no CPU time of collector %d", p.PID())
		}
		if *pollCPUProfile != "" {
			if err := <-profiled; err != nil {
				b.Errorf("CPU profile: %v", err)
			}
		}
		if err := p.Stop(30 * time.Second); err != nil {
			b.Fatalf("stop: %v\n%s", err, p.Tail(30))
		}
		cpu := time.Duration(t1-t0) * time.Second / harness.TicksPerSecond
		reqs := r1 - r0
		perReq := float64(cpu.Microseconds()) / 1000 / float64(max(reqs, 1))
		b.Logf("%d tenants (%d streams) caught up, over %v: collector CPU %v (%.3f cores), %d requests (%.1f a second), %.2f ms of CPU a request; %s",
			n, n*perTenant, window.Round(time.Second), cpu, cpu.Seconds()/window.Seconds(), reqs, float64(reqs)/window.Seconds(), perReq, harness.LoadNote())
		b.ReportMetric(perReq, "cpu-ms/request")
		b.ReportMetric(cpu.Seconds()/window.Seconds(), "cores")
		b.ReportMetric(float64(reqs)/window.Seconds(), "requests/s")
	}
}

// cpuProfile writes the CPU profile of the collector serving metrics
// (and metrics.pprof) on addr, taken over d, to path.
func cpuProfile(addr string, d time.Duration, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("profile request: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s", res.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("profile file: %w", err)
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("profile %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("profile %s: %w", path, err)
	}
	return nil
}
