package source

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
)

// C1, C3, C5: with 5% 5xx, 5% cut-off bodies, token revocation every 50
// requests and late data, a tailing poller with lag + overlap >= late_max is
// complete per truth up to its watermark minus the overlap.
//
// The hour of API time passes in a testing/synctest bubble: the simulator,
// served in memory, and the collector share its fake clock, so the hour
// takes only the CPU its requests need, whatever else runs on the machine
// (it ran alone on a clock 600 times the wall clock, 6 s, and under load
// saw less than its hour). Requests take no time on that clock, so the
// tail is asked once an interval, as planned, not again and again while
// the backfill's requests made the clock run: 4,000 rows an hour in pages
// of 100 make the backfill about 450 requests, so that every fault still
// comes many times (about 20 5xx, 9 revocations).
func TestPoller_C1_C3_C5_FaultsTogetherAreComplete(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testFaultsTogetherAreComplete)
}

func testFaultsTogetherAreComplete(t *testing.T) {
	srv, hc := startSimInMemory(t, func(c *apisim.Config) {
		c.ErrorRate, c.CutRate, c.RevokeEvery = 0.05, 0.05, 50
		c.LateMax = 40 * time.Minute
		c.Rates[apisim.SourceDNS] = 4000
		c.PageSize = 100
	})
	cfg := simConfigInMemory()
	cfg.API.PageRows = 100
	lag, overlap, interval := 10*time.Minute, 30*time.Minute, 5*time.Minute
	cfg.Sources["dns"] = catalog.SourceOverride{Start: ptr("6h"), Lag: &lag, Overlap: &overlap, Interval: catalog.Every(interval)}
	e := newEnvOn(t, cfg, hc)
	p := e.poller(catalog.SourceDNS, "acme", false)
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour) // the bubble's clock
	defer cancel()
	var col collector
	if err := p.Run(ctx, cursor.Cursor{}, EmitFunc(col.emit)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("tailing run ended with %v", err)
	}
	pages := col.snapshot()
	from, wm := firstStart(pages), col.last().Watermark
	if wm.Sub(from) < 6*time.Hour {
		t.Fatalf("watermark moved only %v in an hour of API time", wm.Sub(from))
	}
	checkTruth(t, srv, catalog.SourceDNS, "acme", pages, from, wm.Add(-overlap))
	st := srv.Stats().Get("sim-admin", catalog.SourceDNS)
	t.Logf("stats %+v", st)
	if st.Unauthorized == 0 || st.ServerErrors == 0 || e.apiMetric("collector_retries_total", "source", catalog.SourceDNS, "reason", "body") == 0 {
		t.Fatalf("faults did not happen: %+v", st)
	}
	if e.apiMetric("collector_token_renewals_total", "api", "core") < 2 {
		t.Fatal("token never renewed")
	}
	if strings.Contains(e.logs.String(), "sim-secret") || strings.Contains(e.logs.String(), "Bearer") {
		t.Fatal("a credential appears in the logs")
	}
}

// C1: a server that revokes the user's tokens at every data request never
// lets a poll through. Its 401s are errors of the requests, retried, and
// then a failed poll of kind transient: never an error that blocks the
// stream for api.permanent_error_retry or ends a --once run (issue 20:
// "stream blocked ... kind=auth retry_in=15m0s", exit 1). The key is not
// refused: only the token endpoint could say so.
func TestPoller_C1_RevokedTokensNeverBlockTheStream(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testRevokedTokensNeverBlockTheStream)
}

func testRevokedTokensNeverBlockTheStream(t *testing.T) {
	_, hc := startSimInMemory(t, func(c *apisim.Config) { c.RevokeEvery = 1 })
	cfg := simConfigInMemory()
	cfg.API.Retry.MaxAttempts = 3
	e := newEnvOn(t, cfg, hc)
	p := e.poller(catalog.SourceDNS, "acme", true)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := p.Run(ctx, cursor.Cursor{}, EmitFunc((&collector{}).emit)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("once run ended with %v; want it still retrying at the deadline", err)
	}
	if s := p.Snapshot(); s.Blocked {
		t.Fatalf("stream blocked (%s): %s", s.BlockedReason, s.BlockedError)
	}
	transient := testutilValue(e.metrics.PollErrors(catalog.SourceDNS, "acme", "transient"))
	auth := testutilValue(e.metrics.PollErrors(catalog.SourceDNS, "acme", "auth"))
	if transient == 0 || auth != 0 {
		t.Fatalf("poll errors: %v transient, %v auth; want transient only", transient, auth)
	}
	if strings.Contains(e.logs.String(), "stream blocked") {
		t.Fatal(`"stream blocked" logged`)
	}
}

// C1: a wrong secret fails the run loudly; neither the error nor the logs
// hold the secret.
func TestPoller_C1_WrongSecretNeverAppearsInLogsOrErrors(t *testing.T) {
	t.Parallel()
	srv := startSim(t, nil)
	cfg := simConfig(srv)
	cfg.API.Secret = secret.New("wrong-secret-Zq9")
	e := newEnv(t, cfg, nil)
	err := e.poller(catalog.SourceDNS, "acme", true).Run(t.Context(), cursor.Cursor{}, EmitFunc((&collector{}).emit))
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status != 401 {
		t.Fatalf("err = %v, want a 401", err)
	}
	for _, s := range []string{err.Error(), e.logs.String(), fmtAll(e.cfg)} {
		if strings.Contains(s, "wrong-secret-Zq9") {
			t.Fatalf("secret leaked: %s", s)
		}
	}
	if got := testutilValue(e.metrics.PollErrors(catalog.SourceDNS, "acme", "auth")); got != 1 {
		t.Fatalf("poll errors = %v", got)
	}
}
