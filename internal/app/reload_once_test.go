package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/pipeline"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/status"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// C7 across reloads (issue 33): a reload that restarts a stream (its
// settings changed), adds one and later drops it keeps "each record once".
// Every poll of a stream with recheck: auto asks its dense phase again
// (recheck.Config.Recover), so the first polls of a restarted stream ask
// again for records the stream before it delivered: the once filter the
// pipeline gives the new poller must know them (the checkpoint's
// delivered set, committed before the restart), or they are written
// twice. Real pollers on the in-memory simulator (records up to 10
// minutes late, C3), a real bbolt checkpoint and a real file sink, the
// reloads applied by the reloader as SIGHUP does; an hour of API time
// in a testing/synctest bubble. Every record of the time covered is in
// the files once, and copies were left out after each reload.
func TestReloadKeepsEachRecordOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, hc := simtest.StartInMemory(t, func(c *apisim.Config) {
			c.LateMax = 10 * time.Minute
			c.WaveAmplitude, c.BurstProbability = 0, 0
			c.Rates[catalog.SourceDNS] = 3000 // rows an hour: enough to prove it, few to ask again
		})
		dir := t.TempDir()
		begin := time.Now()
		start := begin.Add(-20 * time.Minute).Truncate(time.Minute)
		cfg := config.Default()
		cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = simtest.InMemoryURL, "sim-key", secret.New("sim-secret")
		cfg.API.Retry = api.RetryConfig{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}
		cfg.Edge.BaseURL = ""
		cfg.Accounts = []string{"acme"}
		cfg.Checkpoint.Path = filepath.Join(dir, "checkpoint.db")
		cfg.Sink.File.Dir, cfg.Sink.File.Fsync = filepath.Join(dir, "out"), false
		cfg.Metrics.Listen = ""
		off, on, from := false, true, start.Format(time.RFC3339)
		cfg.Sources = catalog.SourcesConfig{catalog.DefaultSourcesKey: {Enabled: &off}}
		cfg.Sources[catalog.SourceDNS] = catalog.SourceOverride{Enabled: &on, Start: &from}

		db, err := checkpoint.Open(cfg.Checkpoint.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		reg, log := prometheus.NewRegistry(), slog.New(slog.DiscardHandler)
		sm, err := source.NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		opts := source.Options{Client: api.Options{HTTPClient: hc, Logger: log}, Metrics: sm, RecheckCounts: db}
		set, err := source.Build(cfg.SourceConfig(), nil, opts, false)
		if err != nil {
			t.Fatal(err)
		}
		sk, err := file.New(cfg.Sink.File, reg, log)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if err := sk.Start(ctx); err != nil {
			t.Fatal(err)
		}
		pl := pipeline.New(cfg.Pipeline, db, []pipeline.Target{{Name: "file", Sink: sk}}, []pipeline.Producer{set.Pollers[0]}, reg, log, nil)
		streams := source.Streams(cfg.SourceConfig())
		prog, err := status.NewReporter(cfg.SourceConfig(), streams, set.Pollers, pipelineState{pl}, 0, reg, log)
		if err != nil {
			t.Fatal(err)
		}
		var next config.Config
		r, err := newReloader(func() (config.Config, error) { return next, nil }, cfg, set, opts, false, pl, prog, nil, nil, reg, log)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := pl.Run(ctx); err != nil {
				t.Errorf("pipeline: %v", err)
			}
		})
		suppressed := func() float64 { return counterSum(t, reg, "collector_duplicates_suppressed_total") }
		reload := func(change func(*config.Config)) {
			t.Helper()
			next = r.cfg
			next.Sources = catalog.SourcesConfig{}
			for k, v := range r.cfg.Sources {
				next.Sources[k] = v
			}
			change(&next)
			before := suppressed()
			if err := r.reload(ctx, "test"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Minute)
			if suppressed() == before {
				t.Errorf("no copy left out in the 20 minutes after the reload: the dense phase asked nothing again?")
			}
		}
		time.Sleep(20 * time.Minute)
		// dns/acme restarts (its lag changed), dns/acme-dev starts.
		reload(func(c *config.Config) {
			lag := 90 * time.Second
			c.Accounts = []string{"acme", "acme-dev"}
			c.Sources[catalog.SourceDNS] = catalog.SourceOverride{Enabled: &on, Start: &from, Lag: &lag}
		})
		// dns/acme restarts again, dns/acme-dev stops.
		reload(func(c *config.Config) {
			lag := 2 * time.Minute
			c.Accounts = []string{"acme"}
			c.Sources[catalog.SourceDNS] = catalog.SourceOverride{Enabled: &on, Start: &from, Lag: &lag}
		})
		cancel()
		wg.Wait()
		if err := sk.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}

		ids, copies := fileIDs(t, cfg.Sink.File.Dir)
		if copies != 0 {
			t.Errorf("%d records written more than once (%d distinct), %v left out as copies", copies, len(ids), suppressed())
		}
		// Every record of dns/acme far enough back to be visible (late by
		// 10 minutes at most) is in the files.
		to := time.Now().Add(-15 * time.Minute)
		var got record.Digest
		for id, k := range ids {
			if k.stream == (record.Stream{Source: catalog.SourceDNS, Account: "acme"}) && !k.time.Before(start) && k.time.Before(to) {
				if err := got.Add(id); err != nil {
					t.Fatal(err)
				}
			}
		}
		n, x := srv.Truth(catalog.SourceDNS, "acme", start, to)
		if n < 50 {
			t.Fatalf("truth holds only %d records: nothing to test", n)
		}
		if got.Count != n || got.Hex() != x {
			t.Errorf("dns/acme: %d records in the files (xor %.8s), truth %d (xor %.8s)", got.Count, got.Hex(), n, x)
		}
		t.Logf("%d records in the files, %d of dns/acme [%s, %s); %v copies left out", len(ids), got.Count,
			record.FormatTime(start), record.FormatTime(to), suppressed())
	})
}

// fileRecord is where and when a record of the files is.
type fileRecord struct {
	stream record.Stream
	time   time.Time
}

// fileIDs reads every envelope of the file sink's files under dir: each
// id once, and how many lines repeated an id.
func fileIDs(t *testing.T, dir string) (map[string]fileRecord, int) {
	t.Helper()
	out := map[string]fileRecord{}
	copies := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".ndjson") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var e struct {
				ID, Source, Account string
				Time                time.Time
			}
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				return err
			}
			if _, ok := out[e.ID]; ok {
				copies++
			}
			out[e.ID] = fileRecord{stream: record.Stream{Source: e.Source, Account: e.Account}, time: e.Time}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, copies
}

// counterSum is the sum of the series of counter name in reg.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
