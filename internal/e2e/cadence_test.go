package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// BenchmarkCadenceAtTheDefaults is issue 31's row "defaults" through the
// binary, the pipeline and the file sink: three sub-accounts, dns and
// user_logins, the real budget (480 an hour per functionality, reserve
// 0.1), lag 2m, the daemon for 16 minutes; interval 5m (the default
// before) against no interval key (auto, the default now). It reports
// the freshness of the on-time records that became visible from minute 3
// on and a lag and a cadence before the stop (from visible to fetched),
// the requests an hour per functionality, and each stream's cadence from
// /state. About 17 minutes each (run them at once, one -bench each):
// go test -timeout 30m -run '^$' -bench 'CadenceAtTheDefaults/auto' -benchtime 1x ./internal/e2e/
func BenchmarkCadenceAtTheDefaults(b *testing.B) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
	}{{"interval 5m", 5 * time.Minute}, {"auto", harness.Omit}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				runCadenceDefaults(b, tc.name, tc.interval)
			}
		})
	}
}

func runCadenceDefaults(b *testing.B, name string, interval time.Duration) {
	accounts := []string{"acme", "acme-dev", "acme-eu"}
	sources := []string{"dns", "user_logins"}
	sim := harness.StartSim(b, harness.QuickRates, func(c *apisim.Config) {
		c.Accounts = accounts
		c.RateLimit, c.RatePeriod = 480, time.Hour
	})
	start := time.Now().UTC().Add(-5 * time.Minute).Truncate(time.Second)
	addr := harness.FreeAddr(b)
	c := harness.New(b, harness.Config{Sim: sim, Start: start, Accounts: accounts, Sources: sources, Interval: interval,
		Metrics: addr, NoFsync: true})
	p := c.Start(b)
	began := time.Now()
	const warm, run = 3 * time.Minute, 16 * time.Minute
	time.Sleep(warm)
	before := sim.Stats()
	time.Sleep(run - warm)
	after := sim.Stats()
	state, _ := harness.HTTPGet("http://" + addr + "/state")
	stop := time.Now()
	if err := p.Stop(time.Minute); err != nil {
		b.Fatalf("stop: %v\n%s", err, p.Tail(30))
	}
	var lines []struct {
		Source, Account string
		Cadence         float64 `json:"cadence_seconds"`
		Bound           string  `json:"cadence_bound"`
	}
	if err := json.Unmarshal([]byte(state), &lines); err != nil {
		b.Fatalf("/state: %v: %.300s", err, state)
	}
	fetched := map[string]time.Time{}
	harness.EachEnvelope(b, c.OutDir(), func(e *harness.Envelope, _ []byte) {
		if _, ok := fetched[e.ID]; !ok {
			fetched[e.ID] = e.FetchedAt
		}
	})
	lag := 2 * time.Minute
	cadence := time.Duration(lines[0].Cadence * float64(time.Second))
	var onTime []time.Duration
	missing := 0
	for _, s := range sources {
		for _, a := range accounts {
			vs, err := sim.TruthList(context.Background(), s, a, start, stop)
			if err != nil {
				b.Fatal(err)
			}
			for _, v := range vs {
				if v.At.Before(began.Add(warm)) || !v.At.Before(stop.Add(-lag-cadence-30*time.Second)) || v.At.Sub(v.Time) > lag {
					continue
				}
				at, ok := fetched[v.ID]
				if !ok {
					missing++
					continue
				}
				onTime = append(onTime, max(at.Sub(v.At), 0))
			}
		}
	}
	hours := (run - warm).Hours()
	var perHour float64
	var limited int64
	for _, s := range sources {
		a, bf := after.Get("sim-admin", s), before.Get("sim-admin", s)
		perHour += float64(a.Requests-bf.Requests) / hours / float64(len(sources))
		limited += a.RateLimited
	}
	p50, p99 := percentile(onTime, 0.5), percentile(onTime, 0.99)
	b.ReportMetric(p50.Seconds(), "ontime-p50-s")
	b.ReportMetric(p99.Seconds(), "ontime-p99-s")
	b.ReportMetric(perHour, "requests/h/functionality")
	b.Logf("%s: cadence %+v; %d on-time records, %d missing; on time p50 %v p99 %v; %.0f requests an hour per functionality of 480, %d 429",
		name, lines[0], len(onTime), missing, p50, p99, perHour, limited)
	if missing != 0 || limited != 0 {
		b.Errorf("%s: %d on-time records missing, %d 429", name, missing, limited)
	}
}
