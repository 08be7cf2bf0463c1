package file

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A first run finds no mark of the sink in the checkpoint: that is no
// problem, so its line is DEBUG and an operator at INFO sees nothing that
// reads like a warning at the first start.
func TestRecoverWithoutAMarkSaysSoAtDebugOnly(t *testing.T) {
	t.Parallel()
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var logs bytes.Buffer
		cfg := testConfig(t.TempDir())
		s, err := New(cfg, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level})))
		if err != nil {
			t.Fatal(err)
		}
		if !s.exactlyOnce() {
			t.Fatal("the default delivery is not exactly_once: the test proves nothing")
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recover(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(logs.String(), "has no mark of this sink yet")
		if want := level == slog.LevelDebug; got != want {
			t.Errorf("logger at %v: the no-mark line logged %v, want %v:\n%s", level, got, want, logs.String())
		}
	}
}
