package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

// duplicates counts envelopes delivered beyond the first of their id.
func duplicates(pages []cursor.Page) int64 {
	seen := map[string]bool{}
	var n int64
	for _, p := range pages {
		for _, e := range p.Batch.Envelopes {
			if seen[e.ID] {
				n++
			}
			seen[e.ID] = true
		}
	}
	return n
}

var rowsOfCut = regexp.MustCompile(`reason=(\w+) .*? rows=(\d+)`)

// cutRows sums, by reason, the rows the cut chains had delivered, from the
// "asking the window again in parts" log lines.
func cutRows(logs string) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, "asking the window again in parts") {
			continue
		}
		if m := rowsOfCut.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			out[m[1]] += n
		}
	}
	return out
}

// C3: the server sends 100-row pages while api.page_rows says 5,000 and
// api.max_pages is 5. The collector learns the page size from the first
// full page and splits at min(result_cap, 100 x 5): no chain is cut at the
// page cap, nothing is lost, nothing is delivered twice.
func TestPoller_C3_SmallerServerPagesAreLearntAndNoWindowIsCutAtThePageCap(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceDNS] = 1500
		c.PageSize = 100
	})
	cfg := simConfig(srv)
	cfg.API.MaxPages = 5
	lag := 5 * time.Minute
	cfg.Sources["dns"] = catalog.SourceOverride{Start: ptr("12h"), Lag: &lag}
	e := newEnv(t, cfg, nil)
	p := e.poller(catalog.SourceDNS, "acme", true)
	col := runToEnd(t, p, cursor.Cursor{})
	pages := col.snapshot()
	n := checkTruth(t, srv, catalog.SourceDNS, "acme", pages, firstStart(pages), col.last().Watermark)
	if n < 10_000 {
		t.Fatalf("only %d records", n)
	}
	checkCursors(t, pages)
	for _, pg := range pages {
		if pg.Index() >= cfg.API.MaxPages {
			t.Fatalf("window %s walked to page %d past max_pages %d", pg.Window(), pg.Index()+1, cfg.API.MaxPages)
		}
	}
	if d := duplicates(pages); d != 0 {
		t.Errorf("%d duplicates", d)
	}
	s := p.Snapshot()
	if s.Limits.PageRows != 100 || s.SplitAt != 500 {
		t.Errorf("learnt page rows %d, split at %d; want 100 and 500", s.Limits.PageRows, s.SplitAt)
	}
	if got := e.apiMetric("collector_split_threshold_rows", "source", "dns", "account", "acme"); got != 500 {
		t.Errorf("collector_split_threshold_rows = %v", got)
	}
	if st := srv.Stats().Get("sim-admin", catalog.SourceDNS); st.RowsServed > n+n/5 {
		t.Errorf("served %d rows for %d records", st.RowsServed, n)
	}
}

// C3: a chain cut at api.max_pages with pages left (here: the count is
// capped, so the first page cannot tell) is never marked done: the window
// is asked again in parts, and duplicates are at most what the cut chains
// delivered.
func TestPoller_C3_PageCapWithPagesLeftSplitsTheWindowInsteadOfDroppingItsRest(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceConnections] = 2000
		c.PageSize = 200
		c.TotalRowsCap = 300
	})
	cfg := simConfig(srv)
	cfg.API.PageRows, cfg.API.MaxPages = 200, 4
	lag := 5 * time.Minute
	cfg.Sources["connections"] = catalog.SourceOverride{Start: ptr("6h"), Lag: &lag}
	e := newEnv(t, cfg, nil)
	p := e.poller(catalog.SourceConnections, "acme", true)
	col := runToEnd(t, p, cursor.Cursor{})
	pages := col.snapshot()
	checkTruth(t, srv, catalog.SourceConnections, "acme", pages, firstStart(pages), col.last().Watermark)
	cut := cutRows(e.logs.String())
	if cut[cutPageCap] == 0 {
		t.Fatalf("no chain reached the page cap: the test proves nothing\n%v", cut)
	}
	if d := duplicates(pages); d > cut[cutPageCap]+cut[cutTruncated] {
		t.Errorf("%d duplicates, more than the %d rows the cut chains delivered", d, cut[cutPageCap])
	}
	if s := p.Snapshot(); s.Limits.CountCap != 300 {
		t.Errorf("learnt count cap %d, want 300", s.Limits.CountCap)
	}
}

// C3: the service caps totalRows (here at 2,000) while its chains stop at
// its result cap (5,000, configured right): a chain that ends at the
// split threshold although totalRows said less may have been cut by the
// server, and its window is asked again in parts. Complete.
func TestPoller_C3_CappedTotalRowsWithAChainEndingAtTheCapIsComplete(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceConnections] = 1000
		c.PageSize, c.ResultCap, c.TotalRowsCap = 500, 5000, 2000
	})
	cfg := simConfig(srv)
	cfg.API.PageRows, cfg.API.ResultCap = 500, 5000
	lag := 5 * time.Minute
	cfg.Sources["connections"] = catalog.SourceOverride{Start: ptr("24h"), Lag: &lag}
	e := newEnv(t, cfg, nil)
	p := e.poller(catalog.SourceConnections, "acme-dev", true)
	col := runToEnd(t, p, cursor.Cursor{})
	pages := col.snapshot()
	n := checkTruth(t, srv, catalog.SourceConnections, "acme-dev", pages, firstStart(pages), col.last().Watermark)
	if n < 20_000 {
		t.Fatalf("only %d records", n)
	}
	if cut := cutRows(e.logs.String()); cut[cutTruncated] == 0 {
		t.Fatalf("no chain ended at the cap: the test proves nothing")
	}
	if s := p.Snapshot(); s.Limits.CountCap != 2000 {
		t.Errorf("learnt count cap %d, want 2000", s.Limits.CountCap)
	}
}

// C3: the server's next-page URLs live 1 s while api.next_page_ttl keeps
// its default of 24 h, and the pipeline takes 250 ms a page. The first
// expiry teaches the next-page life; windows are split so that each walk
// fits within it, never restarted whole again and again; the run ends
// complete, and duplicates are at most what the expired chains delivered.
func TestPoller_C3_NextPageLifeShorterThanConfiguredIsLearntAndWalksFitIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testNextPageLifeShorterThanConfiguredIsLearntAndWalksFitIt)
}

func testNextPageLifeShorterThanConfiguredIsLearntAndWalksFitIt(t *testing.T) {
	srv, hc := startSimInMemory(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceUserLogins] = 300
		c.PageSize = 100
		c.NextPageTTL = time.Second
	})
	cfg := simConfigInMemory()
	cfg.API.PageRows = 100
	lag := 5 * time.Minute
	cfg.Sources["user_logins"] = catalog.SourceOverride{Start: ptr("8h"), Lag: &lag}
	e := newEnvOn(t, cfg, hc)
	p := e.poller(catalog.SourceUserLogins, "acme", true)
	col := collector{delay: 250 * time.Millisecond}
	if err := p.Run(t.Context(), cursor.Cursor{}, EmitFunc(col.emit)); err != nil {
		t.Fatal(err)
	}
	pages := col.snapshot()
	checkTruth(t, srv, catalog.SourceUserLogins, "acme", pages, firstStart(pages), col.last().Watermark)
	st := srv.Stats().Get("sim-admin", catalog.SourceUserLogins)
	if st.NextPage404 == 0 {
		t.Fatal("no next-page URL expired: the test proves nothing")
	}
	cut := cutRows(e.logs.String())
	if d := duplicates(pages); d > cut[cutExpired] {
		t.Errorf("%d duplicates, more than the %d rows the expired chains delivered", d, cut[cutExpired])
	}
	s := p.Snapshot()
	if s.Limits.NextPageTTL < time.Second || s.Limits.NextPageTTL > 3*time.Second || s.Limits.PageTime <= 0 {
		t.Errorf("learnt next-page life %v, page time %v", s.Limits.NextPageTTL, s.Limits.PageTime)
	}
	if got := e.apiMetric("collector_next_page_ttl_seen_seconds", "source", "user_logins", "account", "acme"); got < 1 || got > 3 {
		t.Errorf("collector_next_page_ttl_seen_seconds = %v", got)
	}
	if strings.Contains(e.logs.String(), "restarting it") {
		t.Error("a splittable window was restarted whole after an expiry")
	}
	t.Logf("%d expired next pages, %d duplicates of %d rows of expired chains; learnt %+v", st.NextPage404, duplicates(pages), cut[cutExpired], s.Limits)
}

// denying wraps the simulator: while deny is set, every request of path
// answers 403, as a key without that permission gets.
type denying struct {
	sim  http.Handler
	path string
	deny atomic.Bool
}

func (d *denying) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d.deny.Load() && strings.HasPrefix(r.URL.Path, d.path) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"message":"user sim-admin may not read this"}`))
		return
	}
	d.sim.ServeHTTP(w, r)
}

// waitFor polls cond until it holds or 10 s passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// C5: a 403 is not repeated in the fast loop: the stream is blocked
// (Snapshot, collector_stream_blocked, BlockedError for /readyz), asked
// again only every api.permanent_error_retry, and unblocked once its
// requests go through again (a permission granted later).
func TestPoller_C5_ForbiddenStreamIsBlockedRetriedSlowlyAndUnblocked(t *testing.T) {
	t.Parallel()
	sim := startSim(t, func(c *apisim.Config) { c.Rates[apisim.SourceDNS] = 200 })
	d := &denying{sim: sim.Handler(), path: "/api/v2/Activities/DNSs"}
	d.deny.Store(true)
	front := httptest.NewServer(d)
	t.Cleanup(front.Close)
	cfg := simConfig(sim)
	cfg.API.BaseURL = front.URL
	cfg.API.PermanentErrorRetry = 300 * time.Millisecond
	interval := 50 * time.Millisecond
	cfg.Sources["dns"] = catalog.SourceOverride{Start: ptr("2h"), Interval: catalog.Every(interval)}
	e := newEnv(t, cfg, nil)
	p := e.poller(catalog.SourceDNS, "acme", false)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var col collector
	go func() { done <- p.Run(ctx, cursor.Cursor{}, EmitFunc(col.emit)) }()
	defer func() { cancel(); <-done }()

	waitFor(t, "the stream blocked", func() bool { return p.Snapshot().Blocked })
	s := p.Snapshot()
	if s.BlockedReason != api.ReasonForbidden || !strings.Contains(s.BlockedError, "403") {
		t.Fatalf("blocked %q: %q", s.BlockedReason, s.BlockedError)
	}
	if got := e.apiMetric("collector_stream_blocked", "source", "dns", "account", "acme", "reason", "forbidden"); got != 1 {
		t.Fatalf("collector_stream_blocked = %v", got)
	}
	err := BlockedError([]*Poller{p})
	if err == nil || !strings.Contains(err.Error(), "dns/acme: forbidden") || strings.Contains(err.Error(), "sim-secret") {
		t.Fatalf("BlockedError = %v", err)
	}
	if !strings.Contains(e.logs.String(), "retry_in=300ms") {
		t.Fatalf("the blocked stream is not retried at api.permanent_error_retry:\n%s", tail(e.logs.String(), 2000))
	}
	d.deny.Store(false)
	waitFor(t, "the stream unblocked", func() bool { return !p.Snapshot().Blocked && len(col.snapshot()) > 0 })
	if got := e.apiMetric("collector_stream_blocked", "source", "dns", "account", "acme", "reason", "forbidden"); got != 0 {
		t.Fatalf("collector_stream_blocked after the permission came = %v", got)
	}
	if BlockedError([]*Poller{p}) != nil {
		t.Fatal("BlockedError still names the stream")
	}
}

// C2, C5: in Once mode a key without access to a sub-account ends that
// stream's run with an error naming it; a next-page expiry never blocks.
func TestPoller_C5_OnceEndsAForbiddenStreamWithItsError(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) { c.Keys[0].AllowedAccounts = []string{"acme"} })
	cfg := simConfig(srv)
	e := newEnv(t, cfg, nil)
	err := e.poller(catalog.SourceDNS, "acme-dev", true).Run(t.Context(), cursor.Cursor{}, EmitFunc(func(context.Context, cursor.Page) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "dns/acme-dev") {
		t.Fatalf("err = %v", err)
	}
	if _, ok := blocking(&cutError{reason: cutExpired}); ok {
		t.Fatal("a next-page expiry blocks")
	}
}

// C6: edge streams are one per edge token, whatever the sub-accounts: each
// edge record is fetched once, and its envelope names its own account
// (account_name), which the truth counts per account.
func TestPoller_C6_EdgeIsReadOncePerTokenWithEachRecordsOwnAccount(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) {
		c.Accounts = []string{"acme", "acme-dev", "acme-ops"}
		c.Rates[apisim.SourceEdgeAuditEvents] = 100
	})
	cfg := simConfig(srv)
	cfg.Accounts = []string{"acme", "acme-dev", "acme-ops"}
	lag := 5 * time.Minute
	cfg.Sources["edge_audit_events"] = catalog.SourceOverride{Start: ptr("24h"), Lag: &lag}
	var edge []record.Stream
	for _, s := range Streams(cfg) {
		if s.Source == catalog.SourceEdgeAuditEvents {
			edge = append(edge, s)
		}
	}
	if len(edge) != 1 || edge[0].Account != catalog.DefaultEdgeAccount {
		t.Fatalf("edge streams %v, want one of account %q", edge, catalog.DefaultEdgeAccount)
	}
	e := newEnv(t, cfg, nil)
	pc := e.pollerConfig(catalog.SourceEdgeAuditEvents, catalog.DefaultEdgeAccount, true)
	pc.AccountHeader = ""
	col := runToEnd(t, e.newPoller(pc), cursor.Cursor{})
	pages := col.snapshot()
	from, to := firstStart(pages), col.last().Watermark
	byAccount := map[string][]cursor.Page{}
	for _, pg := range pages {
		if pg.Stream().Account != catalog.DefaultEdgeAccount {
			t.Fatalf("page of stream %s", pg.Stream())
		}
		for _, env := range pg.Batch.Envelopes {
			byAccount[env.Account] = append(byAccount[env.Account], cursor.Page{Batch: record.Batch{Envelopes: []record.Envelope{env}}})
		}
	}
	for _, a := range cfg.Accounts {
		if n := checkTruth(t, srv, catalog.SourceEdgeAuditEvents, a, byAccount[a], from, to); n == 0 {
			t.Errorf("no edge records of %s", a)
		}
	}
	if len(byAccount) != 3 || duplicates(pages) != 0 {
		t.Errorf("accounts %d, duplicates %d", len(byAccount), duplicates(pages))
	}
	if st := srv.Stats().Get("edge", "edge"); st.Requests != int64(len(pages)) {
		t.Errorf("%d edge requests for %d windows", st.Requests, len(pages))
	}
}

// C3 max_history: a window in flight that, after a long stop, starts
// before the API's history floor is clamped to it on resume instead of
// being refused with a 400 on every try; the part the API no longer serves
// is counted as unreachable.
func TestPoller_C3_WindowInFlightBeforeTheHistoryFloorIsClampedOnResume(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) { c.Rates[apisim.SourceAgentInfo] = 2 })
	cfg := simConfig(srv)
	e := newEnv(t, cfg, nil)
	p := e.poller(catalog.SourceAgentInfo, "acme", true)
	now := time.Now()
	floor := p.plan.Floor(now)
	old := window.Window{Start: floor.Add(-6 * time.Hour), End: floor.Add(6 * time.Hour)}
	cur := cursor.Cursor{Watermark: old.Start, InFlight: &cursor.Chain{Window: old, NextURL: "", Started: now.Add(-30 * 24 * time.Hour), Pages: 3}}
	col := runToEnd(t, p, cur)
	pages := col.snapshot()
	if len(pages) == 0 || pages[0].Window().Start.Before(floor) || pages[0].Window().End != old.End {
		t.Fatalf("first page of %v, want the window clamped to the floor %s", pages[0].Window(), floor)
	}
	if got := testutilValue(e.metrics.PollErrors(catalog.SourceAgentInfo, "acme", "unreachable")); got < 1 {
		t.Errorf("unreachable not counted")
	}
	checkTruth(t, srv, catalog.SourceAgentInfo, "acme", pages, pages[0].Window().Start, col.last().Watermark)

	gone := window.Window{Start: floor.Add(-48 * time.Hour), End: floor.Add(-24 * time.Hour)}
	cur = cursor.Cursor{Watermark: gone.Start, InFlight: &cursor.Chain{Window: gone, Started: now.Add(-30 * 24 * time.Hour)}}
	col = runToEnd(t, e.poller(catalog.SourceAgentInfo, "acme", true), cur)
	if ps := col.snapshot(); len(ps) == 0 || ps[0].After.Watermark != gone.End || len(ps[0].Batch.Envelopes) != 0 {
		t.Fatalf("a window wholly before the floor: %+v", ps[0])
	}
}

// Filters the endpoint takes are checked against api.max_request_bytes
// before a request: a body over it never leaves (C5).
func TestPoller_C5_SearchBodyOverTheRequestLimitIsNotSent(t *testing.T) {
	t.Parallel()
	srv := startSim(t, nil)
	cfg := simConfig(srv)
	cfg.API.MaxRequestBytes = 1024
	e := newEnv(t, cfg, nil)
	pc := e.pollerConfig(catalog.SourceDNS, "acme", true)
	pc.Settings.Filters = []catalog.Filter{{Expression: "eq", Field: "fqdn", Value: strings.Repeat("x", 2000)}}
	err := e.newPoller(pc).Run(t.Context(), cursor.Cursor{}, EmitFunc(func(context.Context, cursor.Page) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), "api.max_request_bytes") {
		t.Fatalf("err = %v", err)
	}
	if st := srv.Stats().Get("sim-admin", catalog.SourceDNS); st.Requests != 0 {
		t.Fatalf("%d requests sent", st.Requests)
	}
}

// C3: the server's chains stop at 2,000 rows, its own cap, while its
// totalRows are true and api.result_cap keeps its default of 500,000. A
// chain that ends before its count was cut: the window is asked again in
// parts under the chain cap learnt, never committed short. Complete.
func TestPoller_C3_AChainEndingBeforeItsTotalRowsTeachesTheServersChainCap(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceConnections] = 1000
		c.PageSize, c.ResultCap = 500, 2000
	})
	cfg := simConfig(srv)
	cfg.API.PageRows = 500
	lag := 5 * time.Minute
	cfg.Sources["connections"] = catalog.SourceOverride{Start: ptr("24h"), Lag: &lag}
	e := newEnv(t, cfg, nil)
	p := e.poller(catalog.SourceConnections, "acme", true)
	col := runToEnd(t, p, cursor.Cursor{})
	pages := col.snapshot()
	n := checkTruth(t, srv, catalog.SourceConnections, "acme", pages, firstStart(pages), col.last().Watermark)
	if n < 10_000 {
		t.Fatalf("only %d records: no window passed the server's cap, the test proves nothing", n)
	}
	cut := cutRows(e.logs.String())
	if cut[cutShort] == 0 {
		t.Fatalf("no chain ended before its totalRows: the test proves nothing\n%v", cut)
	}
	if d := duplicates(pages); d > cut[cutShort] {
		t.Errorf("%d duplicates, more than the %d rows the short chains delivered", d, cut[cutShort])
	}
	if s := p.Snapshot(); s.Limits.ChainCap != 2000 || s.SplitAt != 2000 {
		t.Errorf("learnt chain cap %d, split at %d; want 2000 and 2000", s.Limits.ChainCap, s.SplitAt)
	}
	if got := e.apiMetric("collector_chain_cap_seen_rows", "source", "connections", "account", "acme"); got != 2000 {
		t.Errorf("collector_chain_cap_seen_rows = %v, want 2000", got)
	}
	st := srv.Stats().Get("sim-admin", catalog.SourceConnections)
	t.Logf("%d records, %d rows of short chains, %d duplicates; %d requests", n, cut[cutShort], duplicates(pages), st.Requests)
}

// C3: AuditLogs answers without paging, cut to one page of 500 rows,
// whatever the window holds. An answer without paging as large as a full
// page is not trusted: its window is asked again in parts until each
// answer is smaller. Complete, and nothing delivered twice (the cut
// answer was never emitted).
func TestPoller_C3_AnAnswerWithoutPagingAsLargeAsAFullPageIsSplit(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceAuditLogs] = 2000
		c.PageSize = 500
		c.AuditUnpaged = true
	})
	cfg := simConfig(srv)
	cfg.API.PageRows = 500
	lag := 5 * time.Minute
	cfg.Sources["audit_logs"] = catalog.SourceOverride{Start: ptr("6h"), Lag: &lag}
	e := newEnv(t, cfg, nil)
	p := e.poller(catalog.SourceAuditLogs, "acme", true)
	col := runToEnd(t, p, cursor.Cursor{})
	pages := col.snapshot()
	n := checkTruth(t, srv, catalog.SourceAuditLogs, "acme", pages, firstStart(pages), col.last().Watermark)
	if n < 5000 {
		t.Fatalf("only %d records: the test proves nothing", n)
	}
	if d := duplicates(pages); d != 0 {
		t.Errorf("%d duplicates: a cut answer was emitted", d)
	}
	if !strings.Contains(e.logs.String(), "window too large to walk whole, split") {
		t.Error("no window was split: the test proves nothing")
	}
	// A split is the normal walk of a large window (a first run's
	// backfill): DEBUG, not an INFO line that reads like a warning.
	if strings.Contains(e.logs.String(), `level=INFO msg="window too large`) {
		t.Error("a split is logged at INFO; want DEBUG")
	}
}
