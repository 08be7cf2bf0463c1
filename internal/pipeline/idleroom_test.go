package pipeline

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/sinktest"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// Issue 32: a stream that caught up waits its cadence between polls; it
// must not hold the room it reserved for a page meanwhile. Its last
// request before the wait may be one that emits nothing (an alert re-ask
// that found no update, C6), and the room
// reserved for it stayed held across the wait: with 50 tenants (450
// streams, the edge ones reserving 10,000 records each) two sleeping
// streams held the whole default buffer, and the others queued for room
// a cadence at a time, so that almost no stream was ever caught up.
// Here the buffer holds one page and three tenants' edge_alerts streams
// (each caught-up poll re-asks its alerts for updates, C6, which finds
// none and emits nothing) run 20 minutes in a testing/synctest bubble:
// once every goroutine waits, no room is held outside the buffer, none
// waits for room, and every stream is caught up.
func TestACaughtUpStreamHoldsNoRoomWhileItWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now().Add(-30 * time.Minute).Truncate(time.Minute)
		lag, interval := time.Minute, 30*time.Second
		db, err := checkpoint.Open(filepath.Join(t.TempDir(), "checkpoint.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		build := func(tenant string, hc *http.Client) *source.Poller {
			cfg := catalog.DefaultConfig()
			cfg.Tenant = tenant
			cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = simtest.InMemoryURL, "sim-key", secret.New("sim-secret")
			cfg.API.Retry = api.RetryConfig{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}
			cfg.Edge.BaseURL, cfg.Edge.Token = simtest.InMemoryURL+"/edge", secret.New("sim-edge-token")
			cfg.Edge.MaxRows = 500
			cfg.Accounts = []string{"acme"}
			off, on, from := false, true, start.Format(time.RFC3339)
			cfg.Sources[catalog.DefaultSourcesKey] = catalog.SourceOverride{Enabled: &off}
			cfg.Sources[catalog.SourceEdgeAlerts] = catalog.SourceOverride{Enabled: &on, Start: &from, Lag: &lag, Interval: catalog.Every(interval)}
			set, err := source.Build(cfg, nil, source.Options{Client: api.Options{HTTPClient: hc}, RecheckCounts: db}, false)
			if err != nil {
				t.Fatal(err)
			}
			return set.Pollers[0]
		}
		var producers []Producer
		var pollers []*source.Poller
		for _, tenant := range []string{"a", "b", "c"} {
			_, hc := simtest.StartInMemory(t, nil)
			p := build(tenant, hc)
			producers, pollers = append(producers, p), append(pollers, p)
		}
		cfg := DefaultConfig()
		cfg.BufferRecords = 500 // one page
		pl := New(cfg, db, []Target{{Name: "file", Sink: &sinktest.Recorder{}}}, producers, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = pl.Run(ctx)
		}()
		time.Sleep(20 * time.Minute) // the bubble's clock
		synctest.Wait()              // every poller waits: between polls, or for room
		held := int64(pl.slots.inUse()) - pl.pending.Load()
		n, rows, _ := pl.slots.waiting()
		now := time.Now()
		cancel()
		wg.Wait()
		if held != 0 || n != 0 {
			t.Errorf("with every stream caught up and waiting, %d records of room are held outside the buffer and %d streams wait for %d records of room", held, n, rows)
		}
		for _, p := range pollers {
			st, _, err := db.Load(context.Background(), p.Stream())
			if err != nil {
				t.Fatal(err)
			}
			if behind := now.Add(-lag).Sub(st.Watermark); behind > 2*interval {
				t.Errorf("%s: committed up to %v, %v behind now - lag: it waited for room", p.Stream(), st.Watermark, behind)
			}
		}
	})
}
