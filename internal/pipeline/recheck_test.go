package pipeline

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/sinktest"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// recheckRun runs real pollers of dns/acme on the in-memory simulator
// (late records, C3) into a real bbolt checkpoint, rechecking at points,
// until the bubble's clock reached until, and returns the recorded
// batches.
func recheckRun(t *testing.T, hc *http.Client, path string, start, until time.Time, reg *prometheus.Registry, points ...time.Duration) []*sinktest.Recorder {
	t.Helper()
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = simtest.InMemoryURL, "sim-key", secret.New("sim-secret")
	cfg.API.Retry = api.RetryConfig{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	cfg.Accounts = []string{"acme"}
	off := false
	cfg.Sources[catalog.DefaultSourcesKey] = catalog.SourceOverride{Enabled: &off}
	on, lag, interval, from := true, time.Minute, 30*time.Second, start.Format(time.RFC3339)
	cfg.Sources["dns"] = catalog.SourceOverride{Enabled: &on, Lag: &lag, Interval: catalog.Every(interval), Start: &from}
	if len(points) > 0 { // none: the default, learnt points (recheck: auto)
		pts := catalog.FixedPoints(points...)
		cfg.Sources["dns"] = catalog.SourceOverride{Enabled: &on, Lag: &lag, Interval: catalog.Every(interval), Start: &from, Recheck: &pts}
	}
	rm, err := recheck.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := source.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	db, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	set, err := source.Build(cfg, nil, source.Options{Client: api.Options{HTTPClient: hc}, RecheckMetrics: rm, Metrics: sm, RecheckCounts: db}, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := &sinktest.Recorder{}
	pl := New(DefaultConfig(), db, []Target{{Name: "file", Sink: rec}}, []Producer{set.Pollers[0]}, reg, slog.New(slog.DiscardHandler), nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := pl.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(time.Until(until)) // the bubble's clock: wakes once every goroutine waits
	cancel()
	wg.Wait()
	return []*sinktest.Recorder{rec}
}

// Pollers log every committed window in the checkpoint and ask the due
// ones again: records that became visible after their window was fetched
// are delivered, and a restart resumes the log from the bbolt file.
//
// The 42 minutes of API time pass in a testing/synctest bubble: the
// simulator, served over in-memory connections, and the collector share
// its clock.
func TestRechecksRecoverLateRecordsThroughTheCheckpoint(t *testing.T) {
	synctest.Test(t, testRechecksRecoverLateRecords)
}

func testRechecksRecoverLateRecords(t *testing.T) {
	srv, hc := simtest.StartInMemory(t, func(c *apisim.Config) {
		c.LateMax = 20 * time.Minute
		c.WaveAmplitude, c.BurstProbability = 0, 0
	})
	path := filepath.Join(t.TempDir(), "checkpoint.db")
	start := time.Now().Add(-10 * time.Minute).Truncate(time.Minute)
	reg1, reg2 := prometheus.NewRegistry(), prometheus.NewRegistry()
	points := []time.Duration{10 * time.Minute, 25 * time.Minute}
	recs := recheckRun(t, hc, path, start, start.Add(25*time.Minute), reg1, points...)
	k := record.Stream{Source: "dns", Account: "acme"}
	db, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := db.Windows(context.Background(), k)
	db.Close()
	if err != nil || len(ws) == 0 {
		t.Fatalf("window log after the first run: %d entries, %v", len(ws), err)
	}
	// Issue 31 (one schedule): every entry stored is due at its end plus
	// the first point after its last ask, whichever ask stored it (the
	// first fetch, a recheck that kept or refetched it).
	for _, w := range ws {
		want := w.End.Add(points[0])
		if w.Passed >= points[0] {
			want = w.End.Add(points[1])
		}
		if w.Passed >= points[1] || !w.Due.Equal(want) {
			t.Errorf("entry [%s, %s) asked %v after its end stores due %v after it, want %v", record.FormatTime(w.Start), record.FormatTime(w.End),
				w.Passed, w.Due.Sub(w.End), want.Sub(w.End))
		}
	}
	recs = append(recs, recheckRun(t, hc, path, start, start.Add(42*time.Minute), reg2, points...)...)

	seen, copies := delivered(recs)
	// Every record once (issue 22): the rechecks that found growth and
	// the restart between the runs deliver only what was not delivered.
	suppressed := testutil.ToFloat64(counterOf(t, reg1, "collector_duplicates_suppressed_total")) +
		testutil.ToFloat64(counterOf(t, reg2, "collector_duplicates_suppressed_total"))
	if copies != 0 {
		t.Errorf("%d records delivered more than once (%d distinct); %d copies suppressed", copies, len(seen), int64(suppressed))
	}
	if suppressed == 0 {
		t.Errorf("no copy suppressed: the rechecks that found growth asked nothing twice?")
	}
	// Every record of [start, now - last point - late_max margin) is
	// visible and was rechecked at its last point.
	to := time.Now().Add(-27 * time.Minute)
	var got record.Digest
	for id, tm := range seen {
		if !tm.Before(start) && tm.Before(to) {
			if err := got.Add(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, x := srv.Truth("dns", "acme", start, to)
	recovered := testutil.ToFloat64(counterOf(t, reg1, "collector_recheck_rows_recovered_total")) +
		testutil.ToFloat64(counterOf(t, reg2, "collector_recheck_rows_recovered_total"))
	t.Logf("[%s, %s): %d records delivered, truth %d; %d rows recovered by rechecks, %d copies suppressed; %d log entries after the first run",
		record.FormatTime(start), record.FormatTime(to), got.Count, n, int64(recovered), int64(suppressed), len(ws))
	if n < 50 {
		t.Fatalf("truth holds only %d records: nothing to test", n)
	}
	if got.Count != n || got.Hex() != x {
		t.Errorf("delivered %d records (xor %.8s), truth %d (xor %.8s)", got.Count, got.Hex(), n, x)
	}
	if recovered == 0 {
		t.Errorf("no row recovered by rechecks")
	}
}

// delivered returns the ids the recorders got, with their record times,
// and how many came more than once.
func delivered(recs []*sinktest.Recorder) (map[string]time.Time, int) {
	return deliveredBy(recs, func(e *record.Envelope) time.Time { return e.Time })
}

// deliveredBy is delivered with the time of each id that at gives (the
// record time, the page's arrival).
func deliveredBy(recs []*sinktest.Recorder, at func(*record.Envelope) time.Time) (map[string]time.Time, int) {
	seen := map[string]time.Time{}
	copies := 0
	for _, r := range recs {
		for _, b := range r.Batches() {
			for _, e := range b.Envelopes {
				if _, dup := seen[e.ID]; dup {
					copies++
				}
				seen[e.ID] = at(&e)
			}
		}
	}
	return seen, copies
}

// A recheck of a large window whose late records fell in its last minutes
// narrows it below its bounds with the delivered set's counts (issue 22):
// it fetches again a range about a page long, not the window, and still
// delivers every late record once.
func TestARecheckOfALargeWindowFetchesAgainOnlyWhatGrew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, hc := simtest.StartInMemory(t, func(c *apisim.Config) {
			c.LateMax = 4 * time.Minute
			c.WaveAmplitude, c.BurstProbability = 0, 0
		})
		path := filepath.Join(t.TempDir(), "checkpoint.db")
		start := time.Now().Add(-6 * time.Hour).Truncate(time.Minute)
		reg := prometheus.NewRegistry()
		recs := recheckRun(t, hc, path, start, time.Now().Add(20*time.Minute), reg, 5*time.Minute, 12*time.Minute)

		seen, copies := delivered(recs)
		if copies != 0 {
			t.Errorf("%d records delivered more than once", copies)
		}
		to := time.Now().Add(-12*time.Minute - 4*time.Minute - time.Minute)
		var got record.Digest
		for id, tm := range seen {
			if !tm.Before(start) && tm.Before(to) {
				if err := got.Add(id); err != nil {
					t.Fatal(err)
				}
			}
		}
		n, x := srv.Truth("dns", "acme", start, to)
		if got.Count != n || got.Hex() != x {
			t.Errorf("[start, %s): delivered %d records (xor %.8s), truth %d (xor %.8s)", record.FormatTime(to), got.Count, got.Hex(), n, x)
		}
		recovered := testutil.ToFloat64(counterOf(t, reg, "collector_recheck_rows_recovered_total"))
		refetched := testutil.ToFloat64(counterOf(t, reg, "collector_recheck_rows_refetched_total"))
		requests := testutil.ToFloat64(counterOf(t, reg, "collector_recheck_requests_total"))
		t.Logf("6 h backfill of %d records: %d rows recovered by rechecks, %d rows fetched again, %d count requests",
			n, int64(recovered), int64(refetched), int64(requests))
		if recovered == 0 {
			t.Fatal("no row recovered: nothing to test")
		}
		// The first window alone holds about 90,000 rows; fetched whole
		// at each point, it would be asked again twice.
		if refetched > float64(n)/4 {
			t.Errorf("%d rows fetched again to recover %d of %d: the grown window was not narrowed", int64(refetched), int64(recovered), n)
		}
	})
}

// Learnt recheck points follow the platform (issue 23): delays of up to 3
// minutes for a third of the records, then, from a record time on, up to 10
// minutes. Before the change the late records reach the sink within about
// a sweep cadence of becoming visible (the default budget: 480 an hour,
// share 0.1, one stream: 100 s); right after it the first ones are found
// by a sparse point, the dense phase grows past the new delays, and the
// late records stay fresh. Two hours of
// API time in a testing/synctest bubble, default budget.
func TestLearntRechecksFollowAChangeOfThePlatformsDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		sw := begin.Add(40 * time.Minute)
		srv, hc := simtest.StartInMemory(t, func(c *apisim.Config) {
			c.LateMax, c.LateShare = 3*time.Minute, 1.0/3
			c.LateMaxAfter, c.LateSwitch = 10*time.Minute, sw
			c.WaveAmplitude, c.BurstProbability = 0, 0
			c.Rates["dns"] = 1200
		})
		path := filepath.Join(t.TempDir(), "checkpoint.db")
		start := begin.Add(-10 * time.Minute).Truncate(time.Minute)
		end := begin.Add(130 * time.Minute)
		reg := prometheus.NewRegistry()
		recs := recheckRun(t, hc, path, start, end, reg)

		fetched, copies := deliveredBy(recs, func(e *record.Envelope) time.Time { return e.FetchedAt })
		if copies != 0 {
			t.Errorf("%d copies", copies)
		}
		vs, err := srv.TruthList(context.Background(), "dns", "acme", start, end)
		if err != nil {
			t.Fatal(err)
		}
		// The freshness of the late records by when they became visible,
		// in 10-minute slices from the start.
		type slice struct {
			ages    []time.Duration
			missing int
		}
		slices := make([]slice, 13)
		for _, v := range vs {
			if v.At.Sub(v.Time) <= time.Minute+30*time.Second || v.At.Before(begin) {
				continue // not late past the lag (and an interval)
			}
			i := int(v.At.Sub(begin) / (10 * time.Minute))
			if i >= len(slices)-1 {
				continue // the last slice: a sparse point may still be due
			}
			at, ok := fetched[v.ID]
			if !ok {
				slices[i].missing++
				continue
			}
			slices[i].ages = append(slices[i].ages, max(at.Sub(v.At), 0))
		}
		var p99 []time.Duration
		for i, sl := range slices[:len(slices)-1] {
			p99 = append(p99, percentile(sl.ages, 0.99))
			t.Logf("visible %3d-%3d min (switch at 40): %4d late records, %d missing, freshness p50 %v p99 %v", i*10, i*10+10,
				len(sl.ages), sl.missing, percentile(sl.ages, 0.5), percentile(sl.ages, 0.99))
			if sl.missing != 0 {
				t.Errorf("visible %d-%d min: %d late records missing", i*10, i*10+10, sl.missing)
			}
		}
		requests := testutil.ToFloat64(counterOf(t, reg, "collector_recheck_requests_total"))
		t.Logf("%d recheck count requests in 130 min", int64(requests))
		// Before the change and from 30 minutes after it on: within two
		// sweep cadences (100 s) and a step.
		bound := 2*100*time.Second + 30*time.Second
		for i, p := range p99 {
			if (i >= 1 && i < 4 || i >= 7) && p > bound {
				t.Errorf("visible %d-%d min: p99 %v, want at most %v", i*10, i*10+10, p, bound)
			}
		}
		// The dense phase learnt the new delays.
		if dense := gaugeOf(t, reg, "collector_recheck_dense_seconds"); dense < 600 {
			t.Errorf("dense phase %v s at the end, want past the 10-minute delays", dense)
		}
	})
}

// gaugeOf is the value of the single series of gauge name in reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series %s", name)
	return 0
}

// percentile is the p-quantile of ds (0 for none).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// counterOf gathers the single series of name from reg.
func counterOf(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				v += m.GetCounter().GetValue()
			}
		}
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name})
	c.Add(v)
	return c
}
