package status

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
)

// Every configured stream has its last-commit and backlog series from the
// start, before any report: one that never committed shows 0, so that an
// alert on "poll errors and no commit" needs no absent().
func TestReporter_EveryStreamHasItsSeriesFromTheStart(t *testing.T) {
	cfg := stateConfig(t)
	off := false
	for _, spec := range catalog.Specs() {
		if spec.Name != catalog.SourceDNS {
			cfg.Sources[spec.Name] = catalog.SourceOverride{Enabled: &off}
		}
	}
	set, err := source.Build(cfg, nil, source.Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	committed := time.Date(2026, 3, 1, 12, 0, 0, 500e6, time.UTC)
	acked := fakeAcked{states: map[record.Stream]checkpoint.State{
		{Source: catalog.SourceDNS, Account: "acme"}: {Cursor: cursor.Cursor{Watermark: committed.Add(-time.Hour)}, Updated: committed},
	}}
	reg := prometheus.NewRegistry()
	if _, err := NewReporter(cfg, source.Streams(cfg), set.Pollers, acked, 0, reg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "collector_stream_last_commit_timestamp_seconds" {
			for _, m := range f.GetMetric() {
				got[m.GetLabel()[0].GetValue()+"/"+m.GetLabel()[1].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	if len(got) != 2 || got["acme/dns"] != float64(committed.UnixMilli())/1e3 || got["acme-dev/dns"] != 0 {
		t.Errorf("collector_stream_last_commit_timestamp_seconds = %v, want acme/dns at %v and acme-dev/dns at 0", got,
			float64(committed.UnixMilli())/1e3)
	}
	if n := testutil.CollectAndCount(reg, "collector_backfill_windows_left", "collector_catchup_eta_seconds"); n != 4 {
		t.Errorf("%d backlog series before the first report, want 2 per stream", n)
	}
}
