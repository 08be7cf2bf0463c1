package app

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/source"
)

// What the running process holds for its life cannot change by a reload
// (issue 33): the refusal names the key as deep as it differs; what
// changes in place (streams, their settings, failing_after) passes.
func TestRestartKeyNamesWhatNeedsARestart(t *testing.T) {
	t.Parallel()
	base := config.Default()
	for _, tc := range []struct {
		name   string
		change func(*config.Config)
		key    string
	}{
		{"buffer", func(c *config.Config) { c.Pipeline.BufferRecords++ }, "pipeline.buffer_records"},
		{"checkpoint", func(c *config.Config) { c.Checkpoint.Path += ".new" }, "checkpoint.path"},
		{"sink dir", func(c *config.Config) { c.Sink.File.Dir += "/new" }, "sink.file.dir"},
		{"listen", func(c *config.Config) { c.Metrics.Listen = "127.0.0.1:9999" }, "metrics.listen"},
		{"tap", func(c *config.Config) { c.Metrics.Tap.Enabled = true }, "metrics.tap.enabled"},
		{"log level", func(c *config.Config) { c.Log.Level = "debug" }, "log.level"},
		{"api rate", func(c *config.Config) { c.API.Rate.Limit++ }, "api.rate.limit"},
		{"accounts", func(c *config.Config) { c.Accounts = []string{"acme", "new"} }, ""},
		{"api timeout", func(c *config.Config) { c.API.Timeout++ }, ""},
		{"failing after", func(c *config.Config) { c.Metrics.FailingAfter++ }, ""},
	} {
		next := config.Default()
		tc.change(&next)
		err := restartKey(base, next)
		var ke *config.KeyError
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.key != "" && (!errors.As(err, &ke) || ke.Key != tc.key):
			t.Errorf("%s: %v, want a KeyError naming %s", tc.name, err, tc.key)
		}
	}
}

// POST /-/reload asks for the token of metrics.reload.token_file when set,
// and answers a refused configuration with 400 and its problems, the
// gauge at 0, the configuration before untouched.
func TestReloadHandlerTokenAndRefusal(t *testing.T) {
	t.Parallel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("a-reload-token-of-32-characters!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	bad := &config.KeyError{Key: "sources.dns.lag", Msg: "must not be negative"}
	cfg := config.Default()
	r, err := newReloader(func() (config.Config, error) { return config.Config{}, bad }, cfg, nil, source.Options{}, false,
		nil, nil, nil, nil, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	h := r.handler(t.Context(), tokenFile)
	post := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/-/reload", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	if w := post(""); w.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d %s", w.Code, w.Body)
	}
	if w := post("wrong-token-wrong-token-wrong"); w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d %s", w.Code, w.Body)
	}
	if got := testutil.ToFloat64(r.ok); got != 1 {
		t.Errorf("collector_config_last_reload_successful %v before any reload, want 1", got)
	}
	w := post("a-reload-token-of-32-characters!")
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "config: sources.dns.lag: must not be negative") {
		t.Errorf("a bad configuration: %d %q", w.Code, w.Body)
	}
	if got := testutil.ToFloat64(r.ok); got != 0 {
		t.Errorf("collector_config_last_reload_successful %v after a refused reload, want 0", got)
	}
	if !reflect.DeepEqual(r.cfg, cfg) {
		t.Error("a refused reload changed the configuration running")
	}
}
