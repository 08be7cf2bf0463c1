package source

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
)

// freshness is what a run of freshRun measured: from becoming visible
// to being fetched, of the records on time (visible within the lag) and
// of the late ones, and the requests an hour per functionality.
type freshness struct {
	onTime, late     []time.Duration
	missingOnTime    int
	requestsPerHour  float64
	limited          int64
	cadence          Cadence
	lag              time.Duration
	visible, fetched int
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// freshRun runs dns and user_logins of three accounts at the default
// settings but interval (nil: the default) against a simulator with the
// real budget (480 an hour) whose records are 10% late by up to 20
// minutes, for 70 minutes of the bubble's time, and measures the records
// that became visible from minute 10 on and at least a lag and two
// cadences before the end.
func freshRun(t *testing.T, interval *catalog.Interval) freshness {
	t.Helper()
	srv, hc := startSimInMemory(t, func(c *apisim.Config) {
		c.Accounts = cadenceAccounts
		for s := range c.Rates {
			c.Rates[s] = 1000
		}
		c.LateMax, c.LateShare = 20*time.Minute, 0.1
	})
	cfg := simConfigInMemory()
	cfg.Accounts = cadenceAccounts
	cfg.Edge.BaseURL = ""
	off := false
	for _, s := range catalog.Specs() {
		cfg.Sources[s.Name] = catalog.SourceOverride{Enabled: &off}
	}
	on, start := true, "10m"
	sources := []string{catalog.SourceDNS, catalog.SourceUserLogins}
	for _, s := range sources {
		cfg.Sources[s] = catalog.SourceOverride{Enabled: &on, Start: &start, Interval: interval}
	}
	set, err := Build(cfg, nil, Options{Client: api.Options{HTTPClient: hc, Logger: discardLogger()}}, false)
	if err != nil {
		t.Fatal(err)
	}
	// What the pipeline's once filter does: the records a page adds go
	// on, and the stream's learner hears of them (recheck: auto learns
	// the platform's delays from the late ones).
	var mu sync.Mutex
	fetched := map[string]time.Time{}
	learners := map[record.Stream]recheck.Observer{}
	for _, p := range set.Pollers {
		learners[p.Stream()] = p.Learner()
	}
	emit := EmitFunc(func(_ context.Context, pg cursor.Page) error {
		mu.Lock()
		var kept []record.Envelope
		for _, e := range pg.Batch.Envelopes {
			if _, ok := fetched[e.ID]; !ok {
				fetched[e.ID] = e.FetchedAt
				kept = append(kept, e)
			}
		}
		mu.Unlock()
		switch l := learners[record.Stream{Source: pg.Batch.Source, Account: pg.Batch.Account}]; pg.Asked {
		case cursor.AskedForward:
			l.ObserveFresh(len(kept), pg.FetchedAt)
		case cursor.AskedLate:
			l.ObserveLate(kept, pg.FetchedAt)
		}
		return nil
	})
	began := time.Now()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, p := range set.Pollers {
		wg.Go(func() {
			if err := p.Run(ctx, cursor.Cursor{}, emit); !errors.Is(err, context.Canceled) {
				t.Errorf("%s: Run = %v", p.Stream(), err)
			}
		})
	}
	const warm, measured = 10 * time.Minute, time.Hour
	time.Sleep(warm)
	before := srv.Stats()
	time.Sleep(measured)
	after := srv.Stats()
	stop := time.Now()
	f := freshness{cadence: set.Pollers[0].Snapshot().Cadence, lag: cfg.Sources.Resolve(catalog.SourceDNS).Lag}
	cancel()
	wg.Wait()
	for _, s := range sources {
		a, b := after.Get("sim-admin", s), before.Get("sim-admin", s)
		f.requestsPerHour += float64(a.Requests-b.Requests) / measured.Hours() / float64(len(sources))
		f.limited += a.RateLimited
		for _, acct := range cadenceAccounts {
			vs, err := srv.TruthList(t.Context(), s, acct, began.Add(-time.Hour), stop)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				if v.At.Before(began.Add(warm)) || !v.At.Before(stop.Add(-f.lag-2*f.cadence.Every)) {
					continue
				}
				f.visible++
				late := v.At.Sub(v.Time) > f.lag
				at, ok := fetched[v.ID]
				switch {
				case ok && late:
					f.late = append(f.late, max(at.Sub(v.At), 0))
				case ok:
					f.onTime = append(f.onTime, max(at.Sub(v.At), 0))
				case !late:
					f.missingOnTime++
				}
				if ok {
					f.fetched++
				}
			}
		}
	}
	return f
}

// The figures of issue 31's table row "defaults" (three accounts, the
// real budget, 10% of the records up to 20 minutes late), before (interval
// 5m, the default of earlier versions) and after (interval auto): the
// freshness of on-time records is the lag plus about half a cadence at
// the median and the lag plus a cadence at the 99th percentile, so auto
// (one poll every 28 s) brings the p99 from the lag + 5 minutes to the
// lag + about 30 s; and the requests an hour per functionality go from
// about 80 to the 432 the budget allows after the reserve, with no 429.
// Late records stay about as fresh as before (they are the rechecks' to
// find, within their share).
func TestCadence_C4_OnTimeRecordsAreFetchedWithinTheLagAndOneCadence(t *testing.T) {
	t.Parallel()
	var before, after freshness
	synctest.Test(t, func(t *testing.T) { before = freshRun(t, catalog.Every(5*time.Minute)) })
	synctest.Test(t, func(t *testing.T) { after = freshRun(t, nil) })
	for _, c := range []struct {
		name string
		f    freshness
	}{{"interval 5m (before)", before}, {"interval auto (after)", after}} {
		f := c.f
		t.Logf("%s: cadence %v (%s); %d records visible, %d fetched; on time p50 %v p99 %v (%d, %d missing); late p50 %v p99 %v (%d fetched); %.0f requests an hour per functionality of 480, %d 429",
			c.name, f.cadence.Every, f.cadence.Bound, f.visible, f.fetched, quantile(f.onTime, 0.5), quantile(f.onTime, 0.99), len(f.onTime), f.missingOnTime,
			quantile(f.late, 0.5), quantile(f.late, 0.99), len(f.late), f.requestsPerHour, f.limited)
		if f.missingOnTime != 0 || f.limited != 0 || len(f.onTime) < 1000 {
			t.Errorf("%s: %d on-time records missing, %d 429, %d on-time records measured", c.name, f.missingOnTime, f.limited, len(f.onTime))
		}
		if p99, most := quantile(f.onTime, 0.99), f.lag+f.cadence.Every+5*time.Second; p99 > most {
			t.Errorf("%s: on-time p99 %v, want at most the lag and one cadence, %v", c.name, p99, most)
		}
		if f.requestsPerHour > 432 {
			t.Errorf("%s: %.0f requests an hour per functionality, over 432 (480 less the reserve)", c.name, f.requestsPerHour)
		}
	}
	if after.cadence.Every > time.Minute || quantile(after.onTime, 0.99) >= quantile(before.onTime, 0.99)-3*time.Minute {
		t.Errorf("auto: cadence %v, on-time p99 %v against %v at 5m: want a cadence of about 28 s and minutes fresher",
			after.cadence.Every, quantile(after.onTime, 0.99), quantile(before.onTime, 0.99))
	}
	// Late records are no staler for polling more often: the rechecks
	// keep their share, and the windows of a fast cadence are rechecked
	// in runs, not one count each.
	for _, q := range []float64{0.5, 0.99} {
		if a, b := quantile(after.late, q), quantile(before.late, q); a > b*5/4+time.Minute {
			t.Errorf("late records at the %v quantile: %v with auto, %v at 5m: want about as fresh", q, a, b)
		}
	}
}
