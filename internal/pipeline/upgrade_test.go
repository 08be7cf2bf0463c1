package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
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

// ledgerRecorder is a sinktest.Recorder with a ledger (sink.Ledger)
// whose Recover finds found past its mark (nothing when nil), so that
// what it holds beyond the checkpoint is found and what the checkpoint's
// held set says.
type ledgerRecorder struct {
	sinktest.Recorder
	found sink.Held
}

func (*ledgerRecorder) Mark(context.Context, map[record.Stream]uint64) ([]byte, error) {
	return []byte(`{"v":1}`), nil
}

func (l *ledgerRecorder) Recover(context.Context, []byte) (sink.Held, error) { return l.found, nil }

func (*ledgerRecorder) Delivery() string { return sink.DeliveryExactlyOnce }

// upgradeRun runs a real poller of dns/acme on the in-memory simulator
// into the real bbolt checkpoint at path and the sink "siem", until the
// bubble's clock reached until.
func upgradeRun(t *testing.T, hc *http.Client, path string, start, until time.Time, siem *ledgerRecorder) {
	t.Helper()
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = simtest.InMemoryURL, "sim-key", secret.New("sim-secret")
	cfg.API.Retry = api.RetryConfig{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	cfg.Accounts = []string{"acme"}
	off := false
	cfg.Sources[catalog.DefaultSourcesKey] = catalog.SourceOverride{Enabled: &off}
	on, lag, interval, from := true, time.Minute, 30*time.Second, start.Format(time.RFC3339)
	pts := catalog.FixedPoints(5 * time.Minute)
	cfg.Sources["dns"] = catalog.SourceOverride{Enabled: &on, Lag: &lag, Interval: catalog.Every(interval), Start: &from, Recheck: &pts}
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
	db, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pl := New(DefaultConfig(), db, []Target{{Name: "siem", Sink: siem}}, []Producer{set.Pollers[0]}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
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

// writeSkipSet writes a sink's skip set beside its mark in the checkpoint
// at path as the collector before the held sets did (1d8f842,
// pipeline/ledger.go: JSON under the sink's name and "\x00skip").
func writeSkipSet(t *testing.T, path, name string, k record.Stream, ids []string) {
	t.Helper()
	type storedJSON struct {
		Source  string   `json:"s"`
		Account string   `json:"a"`
		IDs     []string `json:"ids"`
	}
	v, err := json.Marshal([]storedJSON{{Source: k.Source, Account: k.Account, IDs: ids}})
	if err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	err = bdb.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("sinks"))
		if err != nil {
			return err
		}
		return b.Put([]byte(name+"\x00skip"), v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An upgrade from a checkpoint of the collector before the held sets
// (issue 30) loses and repeats nothing: the first run commits states,
// delivered sets and the sink's mark; then, as that collector left it
// after a crash and a recovery, the sink holds records past the
// checkpoint whose ids the checkpoint keeps in a JSON skip set beside the
// mark. The next run, of this collector, writes none of those records to
// the sink again, and the sink ends with every record of the simulator's
// truth once (CONTRACT C7). The skip set is converted to the sink's held
// set at the run's first commit.
func TestAnUpgradeFromACheckpointWithASkipSetLosesAndRepeatsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, hc := simtest.StartInMemory(t, func(c *apisim.Config) {
			c.LateMax = 2 * time.Minute
			c.WaveAmplitude, c.BurstProbability = 0, 0
		})
		ctx := context.Background()
		k := record.Stream{Source: "dns", Account: "acme"}
		path := filepath.Join(t.TempDir(), "checkpoint.db")
		start := time.Now().Add(-time.Hour).Truncate(time.Minute)
		first := &ledgerRecorder{}
		upgradeRun(t, hc, path, start, time.Now().Add(5*time.Minute), first)

		past := storedPast(t, srv, path, k)
		var ids []string
		for _, v := range past {
			ids = append(ids, v.ID)
		}
		writeSkipSet(t, path, "siem", k, ids)

		second := &ledgerRecorder{}
		upgradeRun(t, hc, path, start, time.Now().Add(30*time.Minute), second)

		onceEach(t, srv, k, start, ids, &first.Recorder, &second.Recorder)

		db, err := checkpoint.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		held, err := db.Held(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(held["siem"][k]) != len(ids) {
			t.Errorf("the checkpoint holds %d records of the sink after the upgrade, want the skip set's %d", len(held["siem"][k]), len(ids))
		}
	})
}

// storedPast waits 10 minutes of the bubble's clock and returns up to 200
// records of k past the watermark committed at path, visible by then: the
// records a dead collector stored in a sink past the checkpoint.
func storedPast(t *testing.T, srv *apisim.Server, path string, k record.Stream) []apisim.Visible {
	t.Helper()
	db, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := db.Load(context.Background(), k)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Minute)
	past, err := srv.TruthList(context.Background(), k.Source, k.Account, st.Watermark, time.Now().Add(-3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(past) < 20 {
		t.Fatalf("%d records past the watermark %s: nothing to test", len(past), record.FormatTime(st.Watermark))
	}
	return past[:min(len(past), 200)]
}

// onceEach checks that the sink, the records recs got and those of held
// (the ids it held already), holds every record of k of the simulator's
// truth from start to 15 minutes ago once (CONTRACT C7).
func onceEach(t *testing.T, srv *apisim.Server, k record.Stream, start time.Time, held []string, recs ...*sinktest.Recorder) {
	t.Helper()
	seen, copies := delivered(recs)
	again := 0
	for _, id := range held {
		if _, ok := seen[id]; ok {
			again++
		}
		seen[id] = time.Time{} // the sink held it already
	}
	to := time.Now().Add(-15 * time.Minute)
	var got record.Digest
	for id, tm := range seen {
		if tm.IsZero() || !tm.Before(start) && tm.Before(to) {
			if err := got.Add(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, x := srv.Truth(k.Source, k.Account, start, to)
	t.Logf("[%s, %s): truth %d records; the sink holds %d, %d of them held past an earlier checkpoint",
		record.FormatTime(start), record.FormatTime(to), n, got.Count, len(held))
	if copies != 0 || again != 0 {
		t.Errorf("%d records written twice, %d of them held already (of %d)", copies+again, again, len(held))
	}
	if got.Count != n || got.Hex() != x {
		t.Errorf("the sink holds %d records (xor %.8s), truth %d (xor %.8s)", got.Count, got.Hex(), n, x)
	}
}

// What a sink's Recover found past its mark outlives a crash of the run
// that recovered (a crash loop): that run commits a fresh mark, past which
// the next Recover looks, and with it the sink's held set; the next run
// writes none of those records to the sink again.
func TestWhatARecoveryFoundOutlivesACrashRightAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, hc := simtest.StartInMemory(t, func(c *apisim.Config) {
			c.LateMax = 2 * time.Minute
			c.WaveAmplitude, c.BurstProbability = 0, 0
		})
		k := record.Stream{Source: "dns", Account: "acme"}
		path := filepath.Join(t.TempDir(), "checkpoint.db")
		start := time.Now().Add(-time.Hour).Truncate(time.Minute)
		first := &ledgerRecorder{}
		upgradeRun(t, hc, path, start, time.Now().Add(5*time.Minute), first)
		past := storedPast(t, srv, path, k)
		var ids []string
		found := sink.Held{}
		for _, v := range past {
			ids = append(ids, v.ID)
			found[k] = append(found[k], cursor.DeliveredOf(v.ID, v.Time))
		}

		// The run that recovers: its sink finds past beyond its mark, and
		// the process dies right after the recovery's commit.
		db, err := checkpoint.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		pl := New(DefaultConfig(), db, []Target{{Name: "siem", Sink: &ledgerRecorder{found: found}}}, nil, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		if err := pl.recoverSinks(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		// The next run's Recover finds nothing past the fresh mark.
		third := &ledgerRecorder{}
		upgradeRun(t, hc, path, start, time.Now().Add(30*time.Minute), third)
		onceEach(t, srv, k, start, ids, &first.Recorder, &third.Recorder)
	})
}
