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

// Issue 32: streams refused for good (a tenant's revoked key, C1, C5)
// wait api.permanent_error_retry between tries; they must not hold the
// room they reserved for the page that failed meanwhile. Here the buffer
// holds one page and two tenants read their own simulators; a minute in,
// tenant "revoked"'s key is rotated away and its tokens revoked: its next
// request, admitted with the page's room reserved, is refused, and the
// stream waits 15 minutes. Tenant "ok" of the same pipeline keeps
// committing. Before the fix it starved for the whole wait. The 11
// minutes pass in a testing/synctest bubble.
func TestAStreamRefusedForGoodHoldsNoRoomWhileItWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		simRevoked, hcRevoked := simtest.StartInMemory(t, nil)
		_, hcOK := simtest.StartInMemory(t, nil)
		start := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
		build := func(tenant string, hc *http.Client) *source.Poller {
			cfg := catalog.DefaultConfig()
			cfg.Tenant = tenant
			cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = simtest.InMemoryURL, "sim-key", secret.New("sim-secret")
			cfg.API.PageRows = 500
			cfg.API.Retry = api.RetryConfig{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}
			cfg.Accounts = []string{"acme"}
			off, on, from := false, true, start.Format(time.RFC3339)
			cfg.Sources[catalog.DefaultSourcesKey] = catalog.SourceOverride{Enabled: &off}
			cfg.Sources["dns"] = catalog.SourceOverride{Enabled: &on, Start: &from}
			set, err := source.Build(cfg, nil, source.Options{Client: api.Options{HTTPClient: hc}}, false)
			if err != nil {
				t.Fatal(err)
			}
			return set.Pollers[0]
		}
		// The refused tenant first: it reserves the whole buffer first.
		revoked, ok := build("revoked", hcRevoked), build("ok", hcOK)
		db, err := checkpoint.Open(filepath.Join(t.TempDir(), "checkpoint.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		cfg := DefaultConfig()
		cfg.BufferRecords = 500 // one page
		rec := &sinktest.Recorder{}
		pl := New(cfg, db, []Target{{Name: "file", Sink: rec}}, []Producer{revoked, ok}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = pl.Run(ctx)
		}()
		time.Sleep(time.Minute) // the bubble's clock
		if err := simRevoked.SetKeySecret("sim-key", "rotated-away"); err != nil {
			t.Fatal(err)
		}
		simRevoked.RevokeTokens("sim-admin")
		time.Sleep(time.Minute)
		before, _, err := db.Load(context.Background(), ok.Stream())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		cancel()
		wg.Wait()
		if !revoked.Snapshot().Blocked {
			t.Fatal("the revoked tenant's stream is not blocked: the test proves nothing")
		}
		st, _, err := db.Load(context.Background(), ok.Stream())
		if err != nil {
			t.Fatal(err)
		}
		if !st.Watermark.After(before.Watermark.Add(5 * time.Minute)) {
			t.Errorf("tenant ok committed up to %v in the 10 minutes after %v: the refused stream held the buffer", st.Watermark, before.Watermark)
		}
		t.Logf("tenant ok: watermark %v then %v, %d records delivered", before.Watermark, st.Watermark, st.Delivered)
	})
}
