package status

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
)

type fakeAcked struct {
	states    map[record.Stream]checkpoint.State
	delivered int64
	failures  map[record.Stream]error
}

func (f fakeAcked) States() map[record.Stream]checkpoint.State { return f.states }
func (f fakeAcked) Delivered() int64                           { return f.delivered }
func (f fakeAcked) Failures() map[record.Stream]error          { return f.failures }

// The reporter merges what the pipeline acknowledged with the pollers'
// view; /state serves exactly that, and Live reads it back.
func TestReporter_StatesAreServedOnStateAndReadBackByLive(t *testing.T) {
	cfg := stateConfig(t)
	off := false
	for _, spec := range catalog.Specs() {
		if spec.Name != catalog.SourceDNS {
			cfg.Sources[spec.Name] = catalog.SourceOverride{Enabled: &off}
		}
	}
	// A bucket that learnt the server's limit of 240 an hour (C4): the
	// running pollers' cadence follows it, the configuration's does not.
	b := budget.New(nil, nil)
	b.Bucket(cfg.API.KeyID, catalog.SourceDNS, budget.Rate{Limit: 240, Period: time.Hour, Reserve: 0.1})
	set, err := source.Build(cfg, b, source.Options{}, true) // no request until Run
	if err != nil {
		t.Fatal(err)
	}
	wm := time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second)
	acked := fakeAcked{states: map[record.Stream]checkpoint.State{
		{Source: catalog.SourceDNS, Account: "acme"}: {Cursor: cursor.Cursor{Watermark: wm}, Delivered: 42},
	}, delivered: 42, failures: map[record.Stream]error{
		{Source: catalog.SourceDNS, Account: "acme-dev"}: errors.New("stream dns/acme-dev stopped: the sink refused it"),
	}}
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	r, err := NewReporter(cfg, source.Streams(cfg), set.Pollers, acked, time.Second, reg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	states := r.States(time.Now())
	if len(states) != 2 || states[0].Source != catalog.SourceDNS || states[0].Account != "acme" ||
		!states[0].Watermark.Equal(wm) || states[0].Delivered != 42 || states[0].LagSeconds < 3*3600 {
		t.Fatalf("states %+v", states)
	}
	if !states[1].Watermark.IsZero() || states[1].Account != "acme-dev" || !strings.Contains(states[1].LastError, "stopped") {
		t.Fatalf("a stream without acknowledged state: %+v", states[1])
	}
	// The pollers' cadence: the two dns streams share the bucket of 240
	// an hour (3600 s / ((216 - 24) / 2)).
	for _, s := range states {
		if s.CadenceSeconds != 37.5 || s.CadenceBound != source.CadenceBudget {
			t.Errorf("%s/%s: cadence %v s (%s), want 37.5 s (budget)", s.Source, s.Account, s.CadenceSeconds, s.CadenceBound)
		}
	}

	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	live, err := Live(t.Context(), strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 || live[0].Source != states[0].Source || !live[0].Watermark.Equal(wm) || live[0].Delivered != 42 {
		t.Fatalf("live %+v, want %+v", live, states)
	}
	if _, err := Live(t.Context(), ""); err == nil {
		t.Fatal("Live without an address")
	}

	r.Summary()
	if !strings.Contains(logs.String(), "msg=done rows_delivered=42") || !strings.Contains(logs.String(), "streams=2") {
		t.Fatalf("summary line: %s", logs.String())
	}
	if n := testutil.CollectAndCount(reg, "collector_backfill_windows_left", "collector_catchup_eta_seconds"); n != 4 {
		t.Fatalf("%d gauge series after a report, want 2 per stream", n)
	}
	if _, err := NewReporter(cfg, nil, nil, acked, 0, reg, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("registering the gauges twice is not an error")
	}
}
