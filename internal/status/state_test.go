package status

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

func stateConfig(t *testing.T) catalog.Config {
	t.Helper()
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://127.0.0.1:1", "k", secret.New("s")
	cfg.Accounts = []string{"acme", "acme-dev"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestStateEstimatesTheBacklogFromWatermarkDensityAndBudget(t *testing.T) {
	cfg := stateConfig(t)
	keys := source.Streams(cfg)
	if len(keys) != 14 { // 7 core sources x 2 accounts; no edge base URL
		t.Fatalf("%d streams: %v", len(keys), keys)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	behind := record.Stream{Source: "dns", Account: "acme"}
	caught := record.Stream{Source: "dns", Account: "acme-dev"}
	stored := map[record.Stream]checkpoint.State{
		// Two days behind at 100,000 rows an hour: 4.8M rows, 960 pages.
		behind: {Cursor: cursor.Cursor{Watermark: now.Add(-48 * time.Hour), Density: 100_000, InFlight: &cursor.Chain{Window: window.Window{Start: now.Add(-48 * time.Hour), End: now.Add(-46 * time.Hour)}, Pages: 3}}, Delivered: 7},
		caught: {Cursor: cursor.Cursor{Watermark: now.Add(-30 * time.Second), Density: 100_000}},
	}
	states := FromCheckpoint(cfg, stored, keys, now)
	byKey := map[record.Stream]StreamState{}
	for _, s := range states {
		byKey[record.Stream{Source: s.Source, Account: s.Account}] = s
	}
	b := byKey[behind]
	if b.CaughtUp || b.WindowsLeft < 2 || b.RowsLeft < 4_500_000 || b.RowsLeft > 4_800_000 || b.Delivered != 7 || b.InFlight == nil || b.InFlight.Pages != 3 {
		t.Fatalf("behind: %+v", b)
	}
	// 960+ requests at 480*0.9/h shared by the two dns streams: 4.4 hours
	// or more; never less than the pages alone allow.
	if b.ETASeconds < 4*3600 || b.ETASeconds > 6*3600 {
		t.Fatalf("ETA %.0fs for ~960 pages at 216 requests an hour", b.ETASeconds)
	}
	if c := byKey[caught]; !c.CaughtUp || c.LagSeconds != 30 { // at now - lag (30s)
		t.Fatalf("caught up: %+v", c)
	}
	ns := byKey[record.Stream{Source: "audit_logs", Account: "acme"}]
	// Never run: its backlog starts at sources.default.start (24h), one
	// window at unknown density, not at the 92-day history limit.
	if !ns.Watermark.IsZero() || ns.CaughtUp || ns.WindowsLeft != 1 {
		t.Fatalf("a stream never run: %+v", ns)
	}

	var out bytes.Buffer
	if err := Print(&out, states, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dns               acme      2026-11-20T12:00:00Z  2.0d", "caught up", "not started", "p3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// A blocked stream says so in the table's last column, with its reason,
// in place of its last error; JSON carries it as an object.
func TestPrintShowsABlockedStreamAndItsReason(t *testing.T) {
	states := []StreamState{
		{Source: "dns", Account: "acme", LastError: "timeout", RowsLeft: -1, ETASeconds: -1},
		{Source: "dns", Account: "acme-dev", LastError: "HTTP 403", RowsLeft: -1, ETASeconds: -1,
			Blocked: &BlockedState{Reason: "forbidden", Since: time.Unix(0, 0).UTC(), Error: "HTTP 403 forbidden"}},
	}
	var table, js strings.Builder
	if err := Print(&table, states, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[1], "timeout") || !strings.Contains(lines[2], "BLOCKED (forbidden): HTTP 403 forbidden") {
		t.Fatalf("table:\n%s", table.String())
	}
	if err := Print(&js, states, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"blocked": {`) || !strings.Contains(js.String(), `"reason": "forbidden"`) || strings.Count(js.String(), `"blocked"`) != 1 {
		t.Fatalf("JSON:\n%s", js.String())
	}
}

// While the collector starts (a sink waits for its destination), /state
// serves the streams as the checkpoint stored them, their recheck windows
// due, and what the start waits for; the table shows it in the last
// column.
func TestStartingStateServesTheCheckpointAndWhatTheStartWaitsFor(t *testing.T) {
	cfg := stateConfig(t)
	now := time.Now().UTC()
	k := record.Stream{Source: "dns", Account: "acme"}
	wm := now.Add(-time.Hour).Truncate(time.Second)
	stored := map[record.Stream]checkpoint.State{k: {Cursor: cursor.Cursor{Watermark: wm}, Delivered: 42}}
	windows := map[record.Stream][]cursor.LoggedWindow{k: {{Start: wm.Add(-2 * time.Hour), End: wm.Add(-time.Hour), Count: 9, FetchedAt: wm.Add(-time.Hour)}}}
	const why = "waiting for sink lake: dial tcp 127.0.0.1:1: connect: connection refused"
	h := StartingHandler(cfg, stored, windows, source.Streams(cfg), func() string { return why })

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/state", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /state: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var states []StreamState
	if err := json.Unmarshal(rec.Body.Bytes(), &states); err != nil {
		t.Fatalf("decode %s: %v", rec.Body.String(), err)
	}
	if len(states) != 14 {
		t.Fatalf("%d lines, want the 14 configured streams", len(states))
	}
	for _, s := range states {
		if s.Starting != why {
			t.Errorf("%s/%s: starting %q, want %q", s.Source, s.Account, s.Starting, why)
		}
		if s.Source == k.Source && s.Account == k.Account && (!s.Watermark.Equal(wm) || s.Delivered != 42 || s.RecheckPending != 1) {
			t.Errorf("dns/acme: %+v, want the stored watermark %s, 42 rows and 1 recheck due", s, wm)
		}
	}
	var table strings.Builder
	if err := Print(&table, states[:1], false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "STARTING: waiting for sink lake") {
		t.Fatalf("table:\n%s", table.String())
	}
}

// What a stream learnt of the server's paging limits (C3) travels with its
// cursor, so state shows it from the checkpoint with the collector
// stopped, as /state shows it live; a stream that learnt nothing shows no
// learnt block.
func TestStateFromTheCheckpointShowsTheLearntLimits(t *testing.T) {
	cfg := stateConfig(t)
	keys := source.Streams(cfg)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	learnt := record.Stream{Source: "dns", Account: "acme"}
	plain := record.Stream{Source: "dns", Account: "acme-dev"}
	stored := map[record.Stream]checkpoint.State{
		learnt: {Cursor: cursor.Cursor{Watermark: now.Add(-time.Hour),
			Limits: window.Limits{PageRows: 5000, NextPageTTL: 10 * time.Minute, ChainCap: 250_000}}},
		plain: {Cursor: cursor.Cursor{Watermark: now.Add(-time.Hour)}},
	}
	byKey := map[record.Stream]StreamState{}
	for _, s := range FromCheckpoint(cfg, stored, keys, now) {
		byKey[record.Stream{Source: s.Source, Account: s.Account}] = s
	}
	l := byKey[learnt].Learnt
	if l == nil || l.PageRows != 5000 || l.NextPageTTLSeconds != 600 || l.ChainCapRows != 250_000 {
		t.Fatalf("learnt limits from the checkpoint: %+v, want page rows 5000, TTL 600 s, chain cap 250000", l)
	}
	if p := byKey[plain].Learnt; p != nil {
		t.Fatalf("a stream that learnt nothing shows %+v", p)
	}
}

// state shows each stream's cadence and what bounds it: with interval
// auto its share of the budget (480 an hour, reserve 0.1, recheck_share
// 0.1, the two accounts of a source: 3600 s / (384 / 2) = 18.75 s), a
// configured interval as it is; the table too.
func TestStateShowsEachStreamsCadenceAndWhatBoundsIt(t *testing.T) {
	cfg := stateConfig(t)
	every := catalog.Interval(5 * time.Minute)
	cfg.Sources[catalog.SourceUserLogins] = catalog.SourceOverride{Interval: &every}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	states := FromCheckpoint(cfg, nil, source.Streams(cfg), now)
	for _, s := range states {
		want, bound := 18.75, source.CadenceBudget
		if s.Source == catalog.SourceUserLogins {
			want, bound = 300, source.CadenceConfigured
		}
		if s.CadenceSeconds != want || s.CadenceBound != bound {
			t.Errorf("%s/%s: cadence %v s (%s), want %v s (%s)", s.Source, s.Account, s.CadenceSeconds, s.CadenceBound, want, bound)
		}
	}
	var b bytes.Buffer
	if err := Print(&b, states, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "CADENCE") || !strings.Contains(b.String(), "19s budget") || !strings.Contains(b.String(), "5m0s configured") {
		t.Errorf("the table shows no cadence:\n%s", b.String())
	}
	b.Reset()
	if err := Print(&b, states, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"cadence_seconds": 18.75`) || !strings.Contains(b.String(), `"cadence_bound": "budget"`) {
		t.Errorf("the JSON shows no cadence:\n%.800s", b.String())
	}
}

// The state of a stopped collector reckons the edge bucket as the running
// streams do (catalog.Spec.PollRequests): an edge_alerts poll re-asks the
// alert lookback (C6), so the two edge streams share 384 requests an
// hour as 1 + 2 requests a poll: 3600 s / (384 / 3) = 28.125 s each,
// not the 18.75 s of one request a poll each.
func TestStateCountsTheRequestsOfAnEdgeAlertsPoll(t *testing.T) {
	cfg := stateConfig(t)
	cfg.Edge.BaseURL, cfg.Edge.Token = "http://127.0.0.1:1", secret.New("t")
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	edge := 0
	for _, s := range FromCheckpoint(cfg, nil, source.Streams(cfg), now) {
		if spec, _ := catalog.LookupSpec(s.Source); !spec.Edge {
			continue
		}
		edge++
		if s.CadenceSeconds != 28.125 || s.CadenceBound != source.CadenceBudget {
			t.Errorf("%s/%s: cadence %v s (%s), want 28.125 s (budget)", s.Source, s.Account, s.CadenceSeconds, s.CadenceBound)
		}
	}
	if edge != 2 {
		t.Fatalf("%d edge streams, want 2", edge)
	}
}
