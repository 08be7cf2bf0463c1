package pipeline

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinktest"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// edgeAlertsRun runs a real poller of edge_alerts (its stream
// edge_alerts/edge, C6) on the in-memory simulator into the real bbolt
// checkpoint at path and the sink "kafka", until the bubble's clock
// reached until.
func edgeAlertsRun(t *testing.T, hc *http.Client, path string, start, until time.Time, snk *ledgerRecorder) {
	t.Helper()
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = simtest.InMemoryURL, "sim-key", secret.New("sim-secret")
	cfg.API.Retry = api.RetryConfig{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	cfg.Edge.BaseURL, cfg.Edge.Token = simtest.InMemoryURL+"/edge", secret.New("sim-edge-token")
	cfg.Accounts = []string{"acme"}
	off := false
	cfg.Sources[catalog.DefaultSourcesKey] = catalog.SourceOverride{Enabled: &off}
	on, from := true, start.Format(time.RFC3339)
	cfg.Sources[catalog.SourceEdgeAlerts] = catalog.SourceOverride{Enabled: &on, Start: &from}
	reg := prometheus.NewRegistry()
	rm, err := recheck.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := source.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	set, err := source.Build(cfg, nil, source.Options{Client: api.Options{HTTPClient: hc}, RecheckMetrics: rm, Metrics: sm}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Pollers) != 1 {
		t.Fatalf("%d pollers, want edge_alerts alone", len(set.Pollers))
	}
	db, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pl := New(DefaultConfig(), db, []Target{{Name: "kafka", Sink: snk}}, []Producer{set.Pollers[0]}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
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
}

// copyFile copies the checkpoint file at from to to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The crash loop of the transactional Kafka test, on the stream
// edge_alerts/edge (C6, C7). A resumed edge alerts stream asks its 24 h
// lookback again by creation time and emits the alerts it has no mark of,
// created long before its start. A run that stored such a re-ask in the
// sink dies before its commit; the next run's recovery finds them and
// holds them, commits one page of the stream before its own re-ask, and
// dies. The run after that must not write them again: the held set lasts
// as long as the alerts are asked again, not only to the stream's
// delivered cutoff (its start), where that page's commit cut it. The
// page's commit is the one every page of the stream makes (its state and
// its alert prune), applied to the checkpoint directly: a real run might
// reach its re-ask before its first commit.
func TestHeldEdgeAlertsOutliveACommitBeforeTheirReask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, hc := simtest.StartInMemory(t, nil)
		k := record.Stream{Source: catalog.SourceEdgeAlerts, Account: catalog.DefaultEdgeAccount}
		dir := t.TempDir()
		path := filepath.Join(dir, "checkpoint.db")
		start := time.Now().Add(-time.Hour).Truncate(time.Minute)
		first := &ledgerRecorder{}
		edgeAlertsRun(t, hc, path, start, time.Now().Add(5*time.Minute), first)

		// The run that dies before its first commit: it runs on a copy of
		// the checkpoint, thrown away, and what it stored is past the mark.
		lost := filepath.Join(dir, "lost.db")
		copyFile(t, path, lost)
		dead := &ledgerRecorder{}
		edgeAlertsRun(t, hc, lost, start, time.Now().Add(5*time.Minute), dead)
		found := sink.Held{}
		before := 0
		for _, e := range dead.Envelopes() {
			found[k] = append(found[k], cursor.DeliveredOf(e.ID, e.Time))
			if e.Time.Before(start) {
				before++
			}
		}
		if before < 20 {
			t.Fatalf("the dead run stored %d alerts created before the stream's start (of %d): nothing to test", before, len(found[k]))
		}

		// The run that recovers: its sink finds them, and it commits a page
		// of the stream (the state as it stands, and the alert prune every
		// page of the stream carries) before its re-ask, then dies.
		db, err := checkpoint.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		pl := New(DefaultConfig(), db, []Target{{Name: "kafka", Sink: &ledgerRecorder{found: found}}}, nil, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		if err := pl.recoverSinks(context.Background()); err != nil {
			t.Fatal(err)
		}
		st, _, err := db.Load(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		prune := time.Now().Add(-catalog.DefaultConfig().Edge.AlertFollow).Truncate(time.Hour)
		err = db.Apply(context.Background(), checkpoint.Changes{
			States: map[record.Stream]checkpoint.State{k: st},
			Alerts: map[record.Stream]cursor.AlertChanges{k: {PruneCreatedBefore: prune}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		last := &ledgerRecorder{}
		edgeAlertsRun(t, hc, path, start, time.Now().Add(10*time.Minute), last)
		seen := map[string]bool{}
		for _, e := range dead.Envelopes() {
			seen[e.ID] = true
		}
		again, early := 0, 0
		for _, e := range last.Envelopes() {
			if seen[e.ID] {
				again++
				if e.Time.Before(start) {
					early++
				}
			}
		}
		if again != 0 {
			t.Errorf("the last run wrote %d of the %d records the sink held again (%d of them alerts created before the stream's start)", again, len(found[k]), early)
		}
		if _, copies := delivered([]*sinktest.Recorder{&first.Recorder, &last.Recorder}); copies != 0 {
			t.Errorf("%d records the first run wrote came again", copies)
		}
		t.Logf("held %d records (%d alerts created before the start); the last run wrote %d records", len(found[k]), before, len(last.Envelopes()))
	})
}
