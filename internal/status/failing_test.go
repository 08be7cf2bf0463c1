package status

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
)

// A stream whose polls keep failing (here: nothing listens at the API's
// address) and that has not committed for three intervals (at least
// DefaultFailingAfter) is named by FailingError for /readyz, with its error;
// not before, and not a stream that committed after its last error.
func TestFailingErrorNamesStreamsThatFailWithoutCommitting(t *testing.T) {
	cfg := stateConfig(t) // base URL http://127.0.0.1:1: refused
	cfg.API.Retry = api.RetryConfig{Initial: 5 * time.Millisecond, Max: 10 * time.Millisecond, MaxAttempts: 1}
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
	failing := record.Stream{Source: catalog.SourceDNS, Account: "acme"}
	var pl *source.Poller
	for _, p := range set.Pollers {
		if p.Stream() == failing {
			pl = p
		}
	}
	acked := fakeAcked{states: map[record.Stream]checkpoint.State{}}
	r, err := NewReporter(cfg, source.Streams(cfg), set.Pollers, acked, 0, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = pl.Run(ctx, cursor.Cursor{Watermark: time.Now().Add(-time.Hour)}, source.EmitFunc(func(context.Context, cursor.Page) error { return nil }))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for pl.Snapshot().Errors == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the poller never failed against a closed port")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done

	if err := r.FailingError(time.Now()); err != nil {
		t.Fatalf("named at once after its first error: %v", err)
	}
	later := time.Now().Add(3*cfg.Sources.Resolve(catalog.SourceDNS).Interval + DefaultFailingAfter)
	err = r.FailingError(later)
	if err == nil || !strings.Contains(err.Error(), "dns/acme: no commit for") || strings.Contains(err.Error(), "dns/acme-dev") ||
		!strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("FailingError = %v, want dns/acme alone with its error", err)
	}
	// A commit after the last error: the stream is not failing.
	acked.states[failing] = checkpoint.State{Cursor: cursor.Cursor{Watermark: time.Now()}, Updated: time.Now().Add(time.Second)}
	if err := r.FailingError(later); err != nil {
		t.Fatalf("a stream that committed after its last error: %v", err)
	}
}
