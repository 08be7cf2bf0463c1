package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Freshness of late records (issue 23), scaled down ten times: lag 6s
// (1m), a third of the records up to 24s late (4m), interval 2s, the
// daemon for 100s (15m). With no recheck key (recheck: auto) every record
// visible by the end is delivered and the p99 of (fetched at - visible
// at) of the records that became visible after the first 20s is at most
// 6s (60s); with the fixed points of earlier versions ([1h, 6h, 24h]) the
// late records wait for the hour: they are missing at the end. Both runs
// deliver each record once.
func TestLearntRechecksDeliverLateRecordsFresh(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, recheck string
		auto          bool
	}{{"auto (no key)", "", true}, {"fixed 1h 6h 24h", "[1h, 6h, 24h]", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
				c.LateMax, c.LateShare = 24*time.Second, 1.0/3
				c.Rates["dns"] = 36000
				c.RateLimit, c.RatePeriod = 600, time.Minute
			})
			f := runFresh(t, sim, tc.recheck, freshScale{lag: 6 * time.Second, interval: 2 * time.Second, warm: 20 * time.Second}, 100*time.Second)
			t.Logf("%s: %d records visible after the first 20s, %d late; %d missing, %d copies; freshness of the late ones p50 %v p99 %v max %v; %d requests, %d 429",
				tc.name, f.visible, f.late, f.missing, f.dups, f.p50, f.p99, f.max, f.requests, f.limited)
			t.Logf("%s: %v", tc.name, f.metrics)
			if f.late < 50 {
				t.Fatalf("only %d late records: the test did not exercise late data", f.late)
			}
			if f.dups != 0 {
				t.Errorf("%d copies", f.dups)
			}
			if f.limited != 0 {
				t.Errorf("%d answers were 429", f.limited)
			}
			if !tc.auto {
				if f.missing == 0 {
					t.Errorf("fixed points missed nothing: the late records did not wait for the hour")
				}
				return
			}
			if f.missing != 0 {
				t.Errorf("%d records visible before the end are missing", f.missing)
			}
			// What was learnt shows in /state and the metrics.
			if !strings.Contains(f.state, `"dense_seconds"`) || !strings.Contains(f.state, `"share_after"`) {
				t.Errorf("/state holds no learnt delays: %.600s", f.state)
			}
			if f.metrics["collector_late_delivery_seconds_count"] == 0 || f.metrics["collector_recheck_dense_seconds"] == 0 ||
				f.metrics["collector_recheck_cadence_seconds"] == 0 {
				t.Errorf("learnt schedule metrics: %v", f.metrics)
			}
			if f.p99 > 6*time.Second {
				t.Errorf("p99 freshness of late records %v, want at most 6s", f.p99)
			}
		})
	}
}

// freshRun is what one run showed of the late records' freshness.
type freshRun struct {
	visible, late, missing int
	dups                   int
	p50, p99, max          time.Duration
	requests, limited      int64
	state                  string             // /state at the end
	metrics                map[string]float64 // the learnt schedule's series
}

// freshScale is the time scale of a freshness run: the lag, the
// interval, and how long after the start records count.
type freshScale struct{ lag, interval, warm time.Duration }

// runFresh runs the daemon on sim for d (dns only, recheck as given, ""
// none) and measures, for every record of the truth that became visible
// between warm after the start and 10 intervals before the stop, whether
// it was delivered and, for the late ones (visible past the lag), how long
// after it became visible its page arrived.
func runFresh(t testing.TB, sim *apisim.Server, recheck string, sc freshScale, d time.Duration) freshRun {
	t.Helper()
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	addr := harness.FreeAddr(t)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: []string{"dns"}, Lag: sc.lag, Interval: sc.interval,
		Recheck: recheck, Metrics: addr, NoFsync: true, Rate: harness.Rate{Limit: 600, Period: time.Minute}})
	p := c.Start(t)
	began := time.Now()
	time.Sleep(d)
	f := freshRun{}
	f.state, _ = harness.HTTPGet("http://" + addr + "/state")
	f.metrics = scrapeSums(addr, "collector_late_delivery_seconds_count", "collector_recheck_dense_seconds", "collector_recheck_cadence_seconds")
	stop := time.Now()
	if err := p.Stop(time.Minute); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Tail(30))
	}
	fetched := map[string]time.Time{}
	dups := 0
	harness.EachEnvelope(t, c.OutDir(), func(e *harness.Envelope, _ []byte) {
		if _, ok := fetched[e.ID]; ok {
			dups++
		}
		fetched[e.ID] = e.FetchedAt
	})
	vs, err := sim.TruthList(context.Background(), "dns", "acme", start, stop)
	if err != nil {
		t.Fatal(err)
	}
	f.dups = dups
	var ages []time.Duration
	from, to := began.Add(sc.warm), stop.Add(-5*sc.interval)
	for _, v := range vs {
		if v.At.Before(from) || !v.At.Before(to) {
			continue
		}
		f.visible++
		late := v.At.Sub(v.Time) > sc.lag // visible past the lag
		if late {
			f.late++
		}
		at, ok := fetched[v.ID]
		if !ok {
			f.missing++
			continue
		}
		if late {
			ages = append(ages, max(at.Sub(v.At), 0))
		}
	}
	f.p50, f.p99, f.max = percentile(ages, 0.5), percentile(ages, 0.99), percentile(ages, 1)
	for _, cnt := range sim.Stats().Counters {
		f.requests += cnt.Requests
		f.limited += cnt.RateLimited
	}
	if f.visible == 0 {
		t.Fatal(fmt.Sprintf("no record became visible in [%v, %v)", from, to))
	}
	return f
}

// BenchmarkLearntRechecksFullScale is the full-scale run of issue 23
// (lag 1m, a third of the records up to 4 min late, interval 20s, the
// daemon for 15 minutes), auto against the fixed points of earlier
// versions; it reports the freshness of the late records. About 16
// minutes: go test -run '^$' -bench LearntRechecksFullScale -benchtime 1x
// ./internal/e2e/
func BenchmarkLearntRechecksFullScale(b *testing.B) {
	for _, tc := range []struct{ name, recheck string }{{"auto", ""}, {"fixed", "[1h, 6h, 24h]"}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				sim := harness.StartSim(b, harness.QuickRates, func(c *apisim.Config) {
					c.LateMax, c.LateShare = 4*time.Minute, 1.0/3
					c.Rates["dns"] = 3600
					c.RateLimit, c.RatePeriod = 480, time.Hour
				})
				f := runFresh(b, sim, tc.recheck, freshScale{lag: time.Minute, interval: 20 * time.Second, warm: 3 * time.Minute}, 15*time.Minute)
				b.ReportMetric(f.p50.Seconds(), "p50-s")
				b.ReportMetric(f.p99.Seconds(), "p99-s")
				b.ReportMetric(float64(f.missing), "missing")
				b.ReportMetric(float64(f.late), "late")
				b.ReportMetric(float64(f.requests), "requests")
				b.Logf("%s: %d visible, %d late, %d missing, %d copies, p50 %v p99 %v max %v, %d requests, %d 429, %v",
					tc.name, f.visible, f.late, f.missing, f.dups, f.p50, f.p99, f.max, f.requests, f.limited, f.metrics)
			}
		})
	}
}
