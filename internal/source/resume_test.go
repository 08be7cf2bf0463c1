package source

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/source/catalog"
)

// interrupted runs a Once poller for dns/acme and cancels it after n pages,
// returning what was emitted.
func interrupted(t *testing.T, e *env, n int) *collector {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	col := &collector{}
	emit := func(ctx context.Context, p cursor.Page) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		_ = col.emit(ctx, p)
		if len(col.snapshot()) == n {
			cancel()
		}
		return nil
	}
	if err := e.poller(catalog.SourceDNS, "acme", true).Run(ctx, cursor.Cursor{}, EmitFunc(emit)); err != context.Canceled {
		t.Fatalf("interrupted run: %v", err)
	}
	if c := col.last(); c.InFlight == nil || c.InFlight.NextURL == "" || c.InFlight.Pages != n {
		t.Fatalf("no chain in flight after %d pages: %+v", n, c)
	}
	return col
}

func resumeEnv(t *testing.T) (*apisim.Server, *env) {
	srv := startSim(t, func(c *apisim.Config) {
		c.Rates[apisim.SourceDNS] = 400
		c.PageSize = 500
	})
	cfg := simConfig(srv)
	cfg.API.PageRows = 500
	lag := 5 * time.Minute
	cfg.Sources["dns"] = catalog.SourceOverride{Start: ptr("12h"), Lag: &lag}
	return srv, newEnv(t, cfg, nil)
}

// C3, DESIGN item 7: a cursor with a chain in flight whose next-page URL is
// still valid continues from that URL; the records before it are not asked
// again, and the union of both runs is complete.
func TestPoller_C3_ResumeContinuesTheChainInFlight(t *testing.T) {
	t.Parallel()
	srv, e := resumeEnv(t)
	first := interrupted(t, e, 3)
	cur := first.last()
	var second collector
	if err := e.poller(catalog.SourceDNS, "acme", true).Run(t.Context(), cur, EmitFunc(second.emit)); err != nil {
		t.Fatal(err)
	}
	ps := second.snapshot()
	if len(ps) == 0 || ps[0].Index() != 3 || ps[0].Window() != cur.InFlight.Window {
		t.Fatalf("resumed at page %d of %s, want page 3 of %s", ps[0].Index(), ps[0].Window(), cur.InFlight.Window)
	}
	if got := testutilValue(e.metrics.Restarts(catalog.SourceDNS, "acme")); got != 0 {
		t.Fatalf("restarts = %v", got)
	}
	all := append(first.snapshot(), ps...)
	checkTruth(t, srv, catalog.SourceDNS, "acme", all, firstStart(all), second.last().Watermark)
}

// C3: a chain in flight whose next-page URL is older than next_page_ttl
// restarts its window from the first page.
func TestPoller_C3_ResumeWithAnExpiredURLRestartsTheWindow(t *testing.T) {
	t.Parallel()
	srv, e := resumeEnv(t)
	first := interrupted(t, e, 2)
	cur := first.last()
	ch := *cur.InFlight
	ch.Started = ch.Started.Add(-25 * time.Hour)
	cur.InFlight = &ch
	var second collector
	if err := e.poller(catalog.SourceDNS, "acme", true).Run(t.Context(), cur, EmitFunc(second.emit)); err != nil {
		t.Fatal(err)
	}
	ps := second.snapshot()
	if len(ps) == 0 || ps[0].Index() != 0 || ps[0].Window().Start != ch.Window.Start {
		t.Fatalf("restarted at page %d of %s, want page 0 of %s", ps[0].Index(), ps[0].Window(), ch.Window)
	}
	if got := testutilValue(e.metrics.Restarts(catalog.SourceDNS, "acme")); got != 1 {
		t.Fatalf("restarts = %v, want 1", got)
	}
	checkTruth(t, srv, catalog.SourceDNS, "acme", ps, firstStart(ps), second.last().Watermark)
}

// C6: an alert updated after the first pass is emitted again, as a Revisit
// page that does not move the cursor, when the lookback is asked again.
func TestPoller_C6_AlertUpdatesAreEmittedOnTheLookbackReask(t *testing.T) {
	t.Parallel()
	clk := newSimClock(1)
	srv := startSim(t, func(c *apisim.Config) {
		c.Now = clk.Now
		c.Rates[apisim.SourceEdgeAlerts] = 200
	})
	cfg := simConfig(srv)
	lag := 5 * time.Minute
	cfg.Sources["edge_alerts"] = catalog.SourceOverride{Start: ptr("24h"), Lag: &lag}
	e := newEnv(t, cfg, clk)
	p := e.poller(catalog.SourceEdgeAlerts, "acme", true)
	col := runToEnd(t, p, cursor.Cursor{})
	n := len(col.snapshot())
	clk.Jump(2 * time.Hour) // updates happen in the first 6 hours of an alert
	if err := p.Run(t.Context(), col.last(), EmitFunc(col.emit)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	var cur cursor.Cursor
	updated := 0
	for i, pg := range col.snapshot() {
		if !pg.Revisit {
			cur = pg.After
			for _, env := range pg.Batch.Envelopes {
				a := alertOf(t, env.Record)
				seen[a.UUID] = max(seen[a.UUID], a.Update)
			}
			continue
		}
		if pg.After.Watermark != cur.Watermark || pg.After.InFlight != nil {
			t.Fatalf("revisit page moved the cursor: %+v after %+v", pg.After, cur)
		}
		for _, env := range pg.Batch.Envelopes {
			a := alertOf(t, env.Record)
			prev, ok := seen[a.UUID]
			if !ok || a.Update <= prev {
				t.Fatalf("alert %s re-emitted without a newer update_time (seen %v, %d <= %d)", a.UUID, ok, a.Update, prev)
			}
			seen[a.UUID] = a.Update
			if i >= n {
				updated++
			}
		}
	}
	if updated == 0 {
		t.Fatalf("no alert update re-emitted (%d alerts seen)", len(seen))
	}
	t.Logf("%d of %d alerts re-emitted with updates", updated, len(seen))
}

type alertFields struct {
	UUID   string `json:"uuid"`
	Update int64  `json:"update_time"`
}

func alertOf(t *testing.T, raw []byte) alertFields {
	t.Helper()
	var a alertFields
	if err := json.Unmarshal(raw, &a); err != nil || a.UUID == "" {
		t.Fatalf("alert %s: %v", raw, err)
	}
	return a
}
