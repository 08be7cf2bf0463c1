package e2e

import (
	"bufio"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Late data (C3: a record may become visible minutes after its time),
// scaled down: lag 20s, records up to 2 min late, rechecks at 1 and 3 min
// after a window's end. Completeness is judged per stream against /_truth
// over the time whose records were all visible, and rechecked at their
// last point, before the stop: [start, stop - 3m - margin).

const (
	lateLag      = 20 * time.Second
	lateMax      = 2 * time.Minute
	lateInterval = 5 * time.Second
	lastPoint    = 3 * time.Minute
)

func lateSim(t *testing.T, muts ...func(*apisim.Config)) *apisim.Server {
	return harness.StartSim(t, append([]func(*apisim.Config){harness.QuickRates, func(c *apisim.Config) {
		c.LateMax = lateMax
		c.Rates["dns"] = 3600
		c.RateLimit = 600
		c.RatePeriod = time.Minute
	}}, muts...)...)
}

// lateRun is what one daemon run under late data showed.
type lateRun struct {
	out       *harness.Output
	missing   int64 // records of the compared range the truth holds and the sink has not
	compared  int64 // records of the compared range in the truth
	dups      int   // deliveries beyond the first of every id
	delivered int   // distinct ids delivered
	metrics   map[string]float64
	lags      []time.Duration // now - watermark of every stream, sampled each second once caught up
	requests  int64           // requests the simulator answered
	limited   int64           // of which 429
}

// missingIn compares, per stream, the distinct ids out holds for records
// of [from, to) with the simulator's truth visible now (C8).
func missingIn(t *testing.T, sim *apisim.Server, out *harness.Output, streams []record.Stream, from, to time.Time) (missing, total int64) {
	t.Helper()
	for _, k := range streams {
		var got record.Digest
		for id := range out.IDs[k] {
			tm := out.Times[id]
			if tm.Before(from) || !tm.Before(to) {
				continue
			}
			if err := got.Add(id); err != nil {
				t.Fatal(err)
			}
		}
		n, x := sim.Truth(k.Source, k.Account, from, to)
		total += n
		if got.Count > n || (got.Count == n && got.Hex() != x) {
			t.Errorf("%s/%s: delivered %d records of [%s, %s) that the truth (%d) does not hold", k.Source, k.Account, got.Count,
				from.Format(time.RFC3339), to.Format(time.RFC3339), n)
		}
		missing += n - got.Count
	}
	return missing, total
}

// scrapeSums sums every sample of each metric name (all label sets).
func scrapeSums(addr string, names ...string) map[string]float64 {
	body, code := harness.HTTPGet("http://" + addr + "/metrics")
	out := map[string]float64{}
	if code != 200 {
		return out
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		base, _, _ := strings.Cut(name, "{")
		if !slices.Contains(names, base) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
			out[base] += v
		}
	}
	return out
}

var recheckSeries = []string{"collector_recheck_windows_total", "collector_recheck_windows_grown_total", "collector_recheck_rows_recovered_total",
	"collector_recheck_requests_total", "collector_recheck_pending", "collector_recheck_windows_expired_total", "collector_recheck_rows_shrunk_total"}

// sampleLags samples now - watermark of every stream (only: those it
// accepts) each second, counting streams within a minute of now, until
// the function it returns is called, which stops the sampling and returns
// the samples.
func sampleLags(addr string, only func(record.Stream) bool) (stop func() []time.Duration) {
	var lags []time.Duration
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			st := harness.LiveState(addr)
			now := time.Now()
			for k, s := range st {
				if only != nil && !only(k) || s.Watermark.IsZero() || now.Sub(s.Watermark) > time.Minute {
					continue
				}
				lags = append(lags, now.Sub(s.Watermark))
			}
		}
	}()
	return func() []time.Duration {
		close(quit)
		<-done
		return lags
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// runLate runs the daemon on sim for d, stops it with SIGTERM and reports.
func runLate(t *testing.T, sim *apisim.Server, recheck string, d time.Duration) lateRun {
	t.Helper()
	start := time.Now().UTC().Add(-3 * time.Minute).Truncate(time.Second)
	addr := harness.FreeAddr(t)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: []string{"dns"}, Lag: lateLag, Interval: lateInterval,
		Recheck: recheck, Metrics: addr, NoFsync: true, Rate: harness.Rate{Limit: 600, Period: time.Minute}})
	p := c.Start(t)
	stopSampling := sampleLags(addr, nil)
	var m map[string]float64
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
		if s := scrapeSums(addr, recheckSeries...); len(s) > 0 {
			m = s
		}
	}
	lags := stopSampling()
	stop := time.Now()
	if err := p.Stop(time.Minute); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Tail(30))
	}
	out := c.ReadOutput(t)
	r := lateRun{out: out, dups: out.Duplicates(), metrics: m, lags: lags}
	for _, ids := range out.IDs {
		r.delivered += len(ids)
	}
	to := stop.Add(-lastPoint - 2*lateInterval - 5*time.Second)
	r.missing, r.compared = missingIn(t, sim, out, c.Streams(), start, to)
	for _, cnt := range sim.Stats().Counters {
		r.requests += cnt.Requests
		r.limited += cnt.RateLimited
	}
	return r
}

// (a) and (b): with rechecks every record visible by the end of its
// window's last recheck point is delivered, at a small fraction of the
// duplicates an overlap of the same reach costs; without them records are
// lost, so the comparison can fail.
func TestLateRecordsRecoveredByRechecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, recheck string
		on            bool
	}{{"recheck 1m 3m", "[1m, 3m]", true}, {"recheck off", "[]", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sim := lateSim(t)
			r := runLate(t, sim, tc.recheck, 4*time.Minute)
			perM := float64(r.dups) * 1e6 / float64(max(r.delivered, 1))
			// An overlap reaching the last point re-fetches every record
			// once per interval while it is in reach.
			overlapPerM := float64(lastPoint/lateInterval-1) * 1e6
			t.Logf("%s: %d of %d records missing; %d distinct delivered, %d duplicates (%.0f per million; overlap 3m at %v: %.0f per million); "+
				"lag p50 %v p99 %v; %d requests, %d 429; metrics %v", tc.name, r.missing, r.compared, r.delivered, r.dups, perM, lateInterval, overlapPerM,
				percentile(r.lags, 0.5), percentile(r.lags, 0.99), r.requests, r.limited, r.metrics)
			if r.compared < 100 {
				t.Fatalf("only %d records compared: the test did not exercise late data", r.compared)
			}
			if !tc.on {
				if r.missing == 0 {
					t.Fatalf("rechecks off lost nothing: the simulator's late data did not reach past the lag")
				}
				return
			}
			if r.missing != 0 {
				t.Errorf("%d of %d records missing with rechecks on", r.missing, r.compared)
			}
			if r.metrics["collector_recheck_rows_recovered_total"] == 0 || r.metrics["collector_recheck_windows_total"] == 0 {
				t.Errorf("recheck metrics show no recovery: %v", r.metrics)
			}
			// Every record once (issue 22): rechecks that found growth
			// deliver only what is new.
			if r.dups != 0 {
				t.Errorf("%d duplicates (%.0f per million): a recheck delivered records twice", r.dups, perM)
			}
			if r.limited != 0 {
				t.Errorf("%d answers were 429", r.limited)
			}
		})
	}
}

// (c) Rechecks compete with a backfill of the same functionality on a
// small budget: no 429, and the caught-up stream's newest window stays
// within lag + interval + margin. The points are the default, learnt ones
// (recheck: auto, issue 23): their sweeps stay inside the share too.
func TestRechecksBesideABackfillKeepTheNewestWindowFresh(t *testing.T) {
	t.Parallel()
	sim := lateSim(t, func(c *apisim.Config) {
		c.RateLimit = 60
		c.RatePeriod = 10 * time.Second
		c.PageSize = 500
		c.AccountRates = map[string]map[string]float64{"acme-dev": {"dns": 400_000}}
	})
	start := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	addr := harness.FreeAddr(t)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: []string{"dns"}, Lag: lateLag, Interval: lateInterval,
		Metrics: addr, NoFsync: true, PageRows: 500, Rate: harness.Rate{Limit: 60, Period: 10 * time.Second}})
	p := c.Start(t)
	stopSampling := sampleLags(addr, func(k record.Stream) bool { return k.Account == "acme" })
	var m map[string]float64
	var backfilling bool
	for end := time.Now().Add(150 * time.Second); time.Now().Before(end); {
		time.Sleep(2 * time.Second)
		if s := scrapeSums(addr, recheckSeries...); len(s) > 0 {
			m = s
		}
		if st := harness.LiveState(addr); st != nil {
			for k, s := range st {
				if k.Account == "acme-dev" && time.Since(s.Watermark) > 10*time.Minute {
					backfilling = true
				}
			}
		}
	}
	lags := stopSampling()
	if err := p.Stop(time.Minute); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Tail(30))
	}
	var requests, limited int64
	for _, cnt := range sim.Stats().Counters {
		requests += cnt.Requests
		limited += cnt.RateLimited
	}
	p50, p99, worst := percentile(lags, 0.5), percentile(lags, 0.99), percentile(lags, 1)
	t.Logf("acme newest-window lag p50 %v p99 %v max %v over %d samples; %d requests, %d 429; metrics %v", p50, p99, worst, len(lags), requests, limited, m)
	if !backfilling {
		t.Fatalf("acme-dev was never backfilling: the rechecks had no competition")
	}
	if limited != 0 {
		t.Errorf("%d answers were 429", limited)
	}
	if len(lags) < 30 {
		t.Fatalf("acme caught up for only %d samples", len(lags))
	}
	// The watermark moves a window at a time: at most lag + interval
	// behind, plus the fetch and the commit (margin 15s).
	if limit := lateLag + lateInterval + 15*time.Second; p99 > limit {
		t.Errorf("newest-window lag p99 %v over lag + interval + margin %v", p99, limit)
	}
	// Rechecks go after fresh windows and before the backfill (C4 budget
	// priority), within their share (sources.*.recheck_share, 10%): a
	// saturated bucket does not starve them, and they take no more than
	// the share from the backfill.
	rr := m["collector_recheck_requests_total"]
	t.Logf("recheck requests %v, pending %v, windows rechecked %v, expired %v", rr, m["collector_recheck_pending"], m["collector_recheck_windows_total"], m["collector_recheck_windows_expired_total"])
	if rr == 0 || m["collector_recheck_windows_total"] == 0 {
		t.Errorf("no recheck got a request through beside the backfill: metrics %v", m)
	}
	if share := 0.1 * 60 * (160.0/10 + 1); rr > share {
		t.Errorf("%v recheck requests, over the 10%% share of the bucket (%.0f)", rr, share)
	}
	if n := m["collector_recheck_windows_expired_total"]; n != 0 {
		t.Errorf("%v windows left the log unrechecked", n)
	}
}

// (d) SIGKILL while windows are rechecked and alerts tracked: nothing is
// lost; a clean restart afterwards emits no alert that did not change,
// and the restart after the kill far fewer than the lookback holds.
func TestKillDuringRechecksAndAlertTrackingLosesNothing(t *testing.T) {
	t.Parallel()
	sim := lateSim(t, func(c *apisim.Config) { c.Rates["edge_alerts"] = 600 })
	start := time.Now().UTC().Add(-3 * time.Minute).Truncate(time.Second)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: []string{"dns", "edge_alerts"}, Lag: lateLag, Interval: lateInterval,
		Recheck: "[1m, 3m]", NoFsync: true, Rate: harness.Rate{Limit: 600, Period: time.Minute}})
	alertDups := func() (dups, n int) {
		out := c.ReadOutput(t)
		for k, ids := range out.IDs {
			if k.Source != "edge_alerts" {
				continue
			}
			for _, c := range ids {
				dups += c - 1
				n++
			}
		}
		return dups, n
	}
	p := c.Start(t)
	time.Sleep(100 * time.Second)
	p.Kill()
	afterKill, alerts := alertDups()
	p = c.Start(t)
	time.Sleep(90 * time.Second)
	if err := p.Stop(time.Minute); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Tail(30))
	}
	beforeClean, _ := alertDups()
	p = c.Start(t)
	time.Sleep(70 * time.Second)
	stop := time.Now()
	if err := p.Stop(time.Minute); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Tail(30))
	}
	afterClean, total := alertDups()
	out := c.ReadOutput(t)
	var core []record.Stream
	for _, k := range c.Streams() {
		if k.Source == "dns" {
			core = append(core, k)
		}
	}
	missing, compared := missingIn(t, sim, out, core, start, stop.Add(-lastPoint-2*lateInterval-5*time.Second))
	t.Logf("dns: %d of %d missing; edge_alerts: %d alerts at the kill, %d duplicates after it, %d before the clean restart, %d after (of %d)",
		missing, compared, alerts, afterKill, beforeClean, afterClean, total)
	if missing != 0 {
		t.Errorf("%d of %d dns records missing after a SIGKILL during rechecks", missing, compared)
	}
	if alerts < 20 {
		t.Fatalf("only %d alerts before the kill: the test did not exercise alert tracking", alerts)
	}
	if beforeClean-afterKill > alerts/2 {
		t.Errorf("the restart after the kill emitted %d alerts again: the lookback was re-emitted (%d alerts)", beforeClean-afterKill, alerts)
	}
	if afterClean != beforeClean {
		t.Errorf("a clean restart emitted %d alerts that did not change", afterClean-beforeClean)
	}
}
