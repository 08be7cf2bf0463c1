package source

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/source/catalog"
)

// cadenceAccounts are the three sub-accounts of the cadence tests.
var cadenceAccounts = []string{"acme", "acme-dev", "acme-eu"}

// cadenceRun is what runCadence measured: each stream's snapshot at the
// end, and the simulator's counters when the streams had caught up and
// an hour later.
type cadenceRun struct {
	snaps         []Snapshot
	before, after apisim.Stats
}

// requests is how many requests (and 429s) the hour measured saw of
// functionality fn.
func (r cadenceRun) requests(user, fn string) (int64, int64) {
	a, b := r.after.Get(user, fn), r.before.Get(user, fn)
	return a.Requests - b.Requests, a.RateLimited - b.RateLimited
}

// runCadence runs every stream of three accounts against a simulator
// whose buckets hold simLimit tokens an hour (C4) for two hours of the
// bubble's time: dns and user_logins (three streams each, one
// functionality each) and both edge sources (two streams sharing the
// functionality edge; the alert re-ask off unless alertUpdates, so that
// each of their polls is one request), each starting 10 minutes back. The
// collector's rate is the default (480 an hour, reserve 0.1),
// recheck_share the default 0.1, and interval is set to interval when not
// nil.
func runCadence(t *testing.T, simLimit int, interval *catalog.Interval, alertUpdates bool) cadenceRun {
	t.Helper()
	srv, hc := startSimInMemory(t, func(c *apisim.Config) {
		c.Accounts = cadenceAccounts
		c.RateLimit = simLimit
		for s := range c.Rates {
			c.Rates[s] = 200
		}
	})
	cfg := simConfigInMemory()
	cfg.Accounts = cadenceAccounts
	if !alertUpdates {
		cfg.Edge.AlertUpdateLookback, cfg.Edge.AlertFollow = 0, 0
	}
	off := false
	for _, s := range catalog.Specs() {
		cfg.Sources[s.Name] = catalog.SourceOverride{Enabled: &off}
	}
	on, start := true, "10m"
	for _, s := range []string{catalog.SourceDNS, catalog.SourceUserLogins, catalog.SourceEdgeAuditEvents, catalog.SourceEdgeAlerts} {
		cfg.Sources[s] = catalog.SourceOverride{Enabled: &on, Start: &start, Interval: interval}
	}
	set, err := Build(cfg, nil, Options{Client: api.Options{HTTPClient: hc, Logger: discardLogger()}}, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	errs := make([]error, len(set.Pollers))
	for i, p := range set.Pollers {
		wg.Go(func() {
			errs[i] = p.Run(ctx, cursor.Cursor{}, EmitFunc(func(context.Context, cursor.Page) error { return nil }))
		})
	}
	// Half an hour to catch up and learn the server's limit, then an
	// hour measured.
	time.Sleep(30 * time.Minute)
	var res cadenceRun
	res.before = srv.Stats()
	time.Sleep(time.Hour)
	res.after = srv.Stats()
	for _, p := range set.Pollers {
		res.snaps = append(res.snaps, p.Snapshot())
	}
	cancel()
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: Run = %v, want context.Canceled", set.Pollers[i].Stream(), err)
		}
	}
	return res
}

// checkCadence checks every stream's cadence: core streams want core, the
// edge streams edge.
func checkCadence(t *testing.T, res cadenceRun, core, edge Cadence) {
	t.Helper()
	if len(res.snaps) != 2*len(cadenceAccounts)+2 {
		t.Fatalf("%d streams, want %d", len(res.snaps), 2*len(cadenceAccounts)+2)
	}
	for _, s := range res.snaps {
		want := core
		if spec, _ := catalog.LookupSpec(s.Stream.Source); spec.Edge {
			want = edge
		}
		if s.Cadence != want {
			t.Errorf("%s: cadence %+v, want %+v", s.Stream, s.Cadence, want)
		}
		if !s.CaughtUp {
			t.Errorf("%s: not caught up after 90 minutes", s.Stream)
		}
	}
}

// checkRequests checks that an hour of the streams of each functionality
// spent at most what the budget refills less the reserve (C4:
// limit*(1-reserve) an hour; the simulator's own bucket is at least
// that), with no 429, and at least the requests their cadence makes:
// perPoll requests for a poll of every stream of fn, less a tenth for
// the step's own time.
func checkRequests(t *testing.T, res cadenceRun, limit int, cadence time.Duration, fn string, perPoll int) {
	t.Helper()
	user := "sim-admin"
	if fn == api.FunctionalityEdge {
		user = "edge"
	}
	got, limited := res.requests(user, fn)
	most := int64(float64(limit) * 0.9)
	least := int64(float64(perPoll) * float64(time.Hour) / float64(cadence) * 0.9)
	if limited != 0 || got > most || got < least {
		t.Errorf("%s: %d requests in the hour measured (%d answered 429); want %d to %d (every %s %d requests, at most %d of %d)",
			fn, got, limited, least, most, cadence, perPoll, most, limit)
	}
	t.Logf("%s: %d requests an hour, %d requests every %s", fn, got, perPoll, cadence)
}

// interval: auto (the default), three accounts, the real budget (480 an
// hour, reserve 0.1, recheck_share 0.1): each stream polls every
// 3600 s / ((432 - 48) / streams of its functionality): 28.1 s for the
// three accounts of one core source, 18.75 s for the two edge sources
// that share one edge bucket; an hour stays within 432 requests per
// functionality, with no 429, and spends about what the cadence says.
func TestCadence_C4_AutoPollsAsOftenAsTheBudgetAllows(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		res := runCadence(t, 480, nil, false)
		core := Cadence{Every: 28125 * time.Millisecond, Bound: CadenceBudget}
		edge := Cadence{Every: 18750 * time.Millisecond, Bound: CadenceBudget}
		checkCadence(t, res, core, edge)
		checkRequests(t, res, 480, core.Every, catalog.SourceDNS, 3)
		checkRequests(t, res, 480, core.Every, catalog.SourceUserLogins, 3)
		checkRequests(t, res, 480, edge.Every, api.FunctionalityEdge, 2)
	})
}

// C4: the server's RateLimit-Limit wins over the configured rate: a
// server that says 240 an hour halves every stream's share, rechecks'
// too: 3600 s / ((216 - 24) / 3) = 56.25 s, 37.5 s for the edge
// sources; the hour stays within 216 requests, with no 429.
func TestCadence_C4_ALowerServerLimitSlowsTheCadence(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		res := runCadence(t, 240, nil, false)
		core := Cadence{Every: 56250 * time.Millisecond, Bound: CadenceBudget}
		edge := Cadence{Every: 37500 * time.Millisecond, Bound: CadenceBudget}
		checkCadence(t, res, core, edge)
		checkRequests(t, res, 240, core.Every, catalog.SourceDNS, 3)
		checkRequests(t, res, 240, edge.Every, api.FunctionalityEdge, 2)
	})
}

// An edge_alerts poll with edge.alert_update_lookback (the default 24h)
// makes 2 requests, its newest window and the lookback re-asked (C6,
// catalog.Spec.PollRequests), and the cadence counts them: the edge
// bucket's 384 requests an hour left to polls are 128 polls of its two
// streams (1 + 2 requests), one every 28.125 s each, not 192 every
// 18.75 s (576 requests an hour, over the 432 of the budget). The hour
// spends what the budget allows and no more, with no 429.
func TestCadence_C4_EdgeAlertsCountTheirLookbackRequest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		res := runCadence(t, 480, nil, true)
		every := Cadence{Every: 28125 * time.Millisecond, Bound: CadenceBudget}
		checkCadence(t, res, every, every)
		checkRequests(t, res, 480, every.Every, api.FunctionalityEdge, 3)
		checkRequests(t, res, 480, every.Every, catalog.SourceDNS, 3)
	})
}

// A configured interval is kept as it is: every stream polls every 2
// minutes, whatever the budget would allow.
func TestCadence_AConfiguredIntervalIsKept(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		res := runCadence(t, 480, catalog.Every(2*time.Minute), false)
		want := Cadence{Every: 2 * time.Minute, Bound: CadenceConfigured}
		checkCadence(t, res, want, want)
		got, limited := res.requests("sim-admin", catalog.SourceDNS)
		// 3 streams x 30 polls, and the rechecks' count requests (at
		// most their share, 48).
		if limited != 0 || got < 80 || got > 90+48 {
			t.Errorf("dns: %d requests in the hour measured (%d answered 429), want 80 to 138", got, limited)
		}
	})
}

// The cadence never goes below MinCadence: a bucket of 4800 an hour
// shared by three streams would allow one request every 2.8 s.
func TestCadenceOf_NeverBelowTheFloor(t *testing.T) {
	t.Parallel()
	big := budget.Rate{Limit: 4800, Period: time.Hour, Reserve: 0.1}
	if got := CadenceOf(0, big, 0.1, 3); got != (Cadence{Every: MinCadence, Bound: CadenceFloor}) {
		t.Errorf("CadenceOf(auto, 4800/h, 3 streams) = %+v, want the floor %v", got, MinCadence)
	}
	if got := CadenceOf(time.Second, big, 0.1, 3); got != (Cadence{Every: time.Second, Bound: CadenceConfigured}) {
		t.Errorf("CadenceOf(1s) = %+v, want 1s configured: a configured interval is the user's", got)
	}
}
