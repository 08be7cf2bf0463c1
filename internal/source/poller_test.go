package source

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/source/catalog"
)

// C3, C7, C8: a Once run over two days delivers exactly the records the
// API holds, per day, by count and XOR of ids.
func TestPoller_C3_C8_OnceOverTwoDaysIsCompletePerTruth(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceDNS] = 400
		c.PageSize = 500
	})
	cfg := simConfig(srv)
	cfg.API.PageRows = 500
	lag := 10 * time.Minute
	cfg.Sources["dns"] = catalog.SourceOverride{Start: ptr("48h"), Lag: &lag}
	e := newEnv(t, cfg, nil)
	p := e.poller(catalog.SourceDNS, "acme", true)
	col := runToEnd(t, p, cursor.Cursor{})
	pages := col.snapshot()
	end := col.last()
	if end.InFlight != nil {
		t.Fatalf("a Once run ended mid-chain: %+v", end)
	}
	from := firstStart(pages)
	if got := end.Watermark.Sub(from); got < 47*time.Hour {
		t.Fatalf("covered %v, want about 48h - lag", got)
	}
	n := checkTruth(t, srv, catalog.SourceDNS, "acme", pages, from, end.Watermark)
	if n < 15000 {
		t.Fatalf("only %d records", n)
	}
	if st := srv.Stats().Get("sim-admin", catalog.SourceDNS); st.RateLimited != 0 {
		t.Fatalf("429s: %+v", st)
	}
	checkCursors(t, pages)
}

// checkCursors checks the After of every page (DESIGN item 4): mid-chain
// pages keep the watermark and carry the chain; the last page of a window
// moves the watermark to the window's end.
func checkCursors(t *testing.T, pages []cursor.Page) {
	t.Helper()
	var wm time.Time
	for i, p := range pages {
		if p.Revisit {
			continue
		}
		a := p.After
		if a.InFlight == nil {
			if !a.Watermark.Equal(p.Window().End) {
				t.Fatalf("page %d: last page of %s moves the watermark to %s", i, p.Window(), a.Watermark)
			}
		} else {
			if a.InFlight.NextURL == "" || a.InFlight.Window != p.Window() || a.InFlight.Pages != p.Index()+1 {
				t.Fatalf("page %d: bad in-flight %+v for %s index %d", i, a.InFlight, p.Window(), p.Index())
			}
			if !wm.IsZero() && !a.Watermark.Equal(wm) {
				t.Fatalf("page %d: mid-chain page moved the watermark %s -> %s", i, wm, a.Watermark)
			}
		}
		if !wm.IsZero() && a.Watermark.Before(wm) {
			t.Fatalf("page %d: watermark went back %s -> %s", i, wm, a.Watermark)
		}
		wm = a.Watermark
	}
}

func ptr[T any](v T) *T { return &v }

// C3: a window whose first page reports totalRows at the result cap is
// split before its chain is walked, so no chain reaches the cap and
// nothing is lost.
func TestPoller_C3_DenseWindowsAreSplitBeforeTheCap(t *testing.T) {
	t.Parallel()
	srv := startSim(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceConnections] = 1000 // 24,000 a day
		c.PageSize, c.ResultCap = 500, 5000
	})
	cfg := simConfig(srv)
	cfg.API.PageRows, cfg.API.ResultCap = 500, 5000
	lag := 5 * time.Minute
	cfg.Sources["connections"] = catalog.SourceOverride{Start: ptr("24h"), Lag: &lag}
	e := newEnv(t, cfg, nil)
	p := e.poller(catalog.SourceConnections, "acme-dev", true)
	col := runToEnd(t, p, cursor.Cursor{})
	pages := col.snapshot()
	checkTruth(t, srv, catalog.SourceConnections, "acme-dev", pages, firstStart(pages), col.last().Watermark)
	checkCursors(t, pages)
	maxPages := int(cfg.API.ResultCap) / cfg.API.PageRows
	for _, pg := range pages {
		if pg.Index()+1 >= maxPages {
			t.Fatalf("window %s walked to page %d, the cap is %d pages", pg.Window(), pg.Index()+1, maxPages)
		}
	}
	if got := testutilValue(e.metrics.Splits(catalog.SourceConnections, "acme-dev")); got < 1 {
		t.Fatalf("no window split")
	}
	st := srv.Stats().Get("sim-admin", catalog.SourceConnections)
	if st.NextPage404 != 0 || st.RateLimited != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Every row was served once, plus the first pages of the windows that
	// were split (asked, then discarded for their parts).
	if st.RowsServed > 24000+24000/5 {
		t.Fatalf("served %d rows for about 24,000 records", st.RowsServed)
	}
}

// C3: next-page URLs that expire before a chain is walked (a slow
// pipeline) make the window restart, then split, and the result is still
// complete.
func TestPoller_C3_NextPageExpiryShorterThanTheWalkIsComplete(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testNextPageExpiryShorterThanTheWalkIsComplete)
}

func testNextPageExpiryShorterThanTheWalkIsComplete(t *testing.T) {
	srv, hc := startSimInMemory(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceUserLogins] = 300
		c.PageSize = 500
		c.NextPageTTL = time.Second
	})
	cfg := simConfigInMemory()
	cfg.API.PageRows, cfg.API.NextPageTTL = 500, time.Second
	lag := 5 * time.Minute
	cfg.Sources["user_logins"] = catalog.SourceOverride{Start: ptr("12h"), Lag: &lag}
	e := newEnvOn(t, cfg, hc)
	p := e.poller(catalog.SourceUserLogins, "acme", true)
	col := collector{delay: 250 * time.Millisecond}
	if err := p.Run(t.Context(), cursor.Cursor{}, EmitFunc(col.emit)); err != nil {
		t.Fatal(err)
	}
	pages := col.snapshot()
	checkTruth(t, srv, catalog.SourceUserLogins, "acme", pages, firstStart(pages), col.last().Watermark)
	if got := testutilValue(e.metrics.Restarts(catalog.SourceUserLogins, "acme")); got < 1 {
		t.Fatalf("no next-page restart: the test did not expire a URL")
	}
	if st := srv.Stats().Get("sim-admin", catalog.SourceUserLogins); st.NextPage404 < 1 {
		t.Fatalf("stats %+v", st)
	}
}

// C4: two accounts backfilling through one user's buckets at "60 per 5 s"
// never see a 429.
func TestPoller_C4_TwoAccountBackfillSeesNo429(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testTwoAccountBackfillSeesNo429)
}

func testTwoAccountBackfillSeesNo429(t *testing.T) {
	srv, hc := startSimInMemory(t, func(c *apisim.Config) {
		c.RateLimit, c.RatePeriod = 60, 5*time.Second
		c.Rates[apisim.SourceDNS] = 1000
		c.PageSize = 500
	})
	cfg := simConfigInMemory()
	cfg.API.PageRows = 500
	cfg.API.Rate = api.RateConfig{Limit: 60, Period: 5 * time.Second, Reserve: 0.1}
	lag := 5 * time.Minute
	cfg.Sources["dns"] = catalog.SourceOverride{Start: ptr("24h"), Lag: &lag}
	e := newEnvOn(t, cfg, hc)
	res := runAccounts(t, e, catalog.SourceDNS, []string{"acme", "acme-dev"})
	for a, col := range res {
		pages := col.snapshot()
		checkTruth(t, srv, catalog.SourceDNS, a, pages, firstStart(pages), col.last().Watermark)
	}
	st := srv.Stats().Get("sim-admin", catalog.SourceDNS)
	if st.RateLimited != 0 {
		t.Fatalf("429s seen: %+v", st)
	}
	if st.Requests < 70 {
		t.Fatalf("only %d requests: the budget was not exercised", st.Requests)
	}
}

// C4: with a noisy neighbour spending half of the refill, 429s are few and
// nothing is lost.
func TestPoller_C4_NoisyNeighbourFew429sNothingLost(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testNoisyNeighbourFew429sNothingLost)
}

func testNoisyNeighbourFew429sNothingLost(t *testing.T) {
	srv, hc := startSimInMemory(t, func(c *apisim.Config) {
		c.RateLimit, c.RatePeriod = 60, 5*time.Second
		c.NoisyFraction = 0.5
		c.Rates[apisim.SourceDNS] = 1000
		c.PageSize = 500
	})
	cfg := simConfigInMemory()
	cfg.API.PageRows = 500
	cfg.API.Rate = api.RateConfig{Limit: 60, Period: 5 * time.Second, Reserve: 0.1}
	lag := 5 * time.Minute
	cfg.Sources["dns"] = catalog.SourceOverride{Start: ptr("24h"), Lag: &lag}
	e := newEnvOn(t, cfg, hc)
	res := runAccounts(t, e, catalog.SourceDNS, []string{"acme", "acme-dev"})
	for a, col := range res {
		pages := col.snapshot()
		checkTruth(t, srv, catalog.SourceDNS, a, pages, firstStart(pages), col.last().Watermark)
	}
	st := srv.Stats().Get("sim-admin", catalog.SourceDNS)
	t.Logf("stats: %+v", st)
	if st.RateLimited > st.Requests/20 {
		t.Fatalf("too many 429s: %+v", st)
	}
}

// runAccounts runs one Once poller per account concurrently.
func runAccounts(t *testing.T, e *env, source string, accounts []string) map[string]*collector {
	t.Helper()
	res := map[string]*collector{}
	errs := make(chan error, len(accounts))
	for _, a := range accounts {
		col := &collector{}
		res[a] = col
		p := e.poller(source, a, true)
		go func() { errs <- p.Run(t.Context(), cursor.Cursor{}, EmitFunc(col.emit)) }()
	}
	for range accounts {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return res
}
