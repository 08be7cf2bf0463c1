package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// /tap is off by default; on, it needs a token file unless metrics.listen
// is loopback (issue 29 item 1: on 0.0.0.0 with no token, anyone who
// reaches the port read every record); the token file is checked like the
// other secret files (missing, empty, too short), naming the key.
func TestTapIsOffByDefaultAndNeedsATokenOffLoopback(t *testing.T) {
	t.Parallel()
	env := []string{"COLLECTOR_API__SECRET=s"}
	if d := Default(); d.Metrics.Tap.Enabled || d.Metrics.Tap.TokenFile != "" {
		t.Fatalf("default metrics.tap = %+v, want off", d.Metrics.Tap)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(good, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, metrics string
		want          string // "" loads; else the error names it
	}{
		{"off on 0.0.0.0", "listen: 0.0.0.0:9464", ""},
		{"on, loopback, no token", "listen: 127.0.0.1:9464\n  tap: {enabled: true}", ""},
		{"on, localhost, no token", "listen: localhost:9464\n  tap: {enabled: true}", ""},
		{"on, ::1, no token", "listen: '[::1]:9464'\n  tap: {enabled: true}", ""},
		{"on, 0.0.0.0, no token", "listen: 0.0.0.0:9464\n  tap: {enabled: true}", "metrics.tap.token_file: must be set when metrics.tap.enabled"},
		{"on, :9464, no token", "listen: ':9464'\n  tap: {enabled: true}", "metrics.tap.token_file: must be set"},
		{"on, a name, no token", "listen: collector.internal:9464\n  tap: {enabled: true}", "metrics.tap.token_file: must be set"},
		{"on, no listen", "listen: ''\n  tap: {enabled: true}", "metrics.tap.enabled: needs metrics.listen"},
		{"on, 0.0.0.0, token", "listen: 0.0.0.0:9464\n  tap: {enabled: true, token_file: " + good + "}", ""},
		{"on, token missing", "listen: 0.0.0.0:9464\n  tap: {enabled: true, token_file: " + filepath.Join(dir, "nope") + "}", "metrics.tap.token_file: file " + filepath.Join(dir, "nope") + " does not exist"},
		{"on, token short", "listen: 0.0.0.0:9464\n  tap: {enabled: true, token_file: " + short + "}", "metrics.tap.token_file: file " + short + " holds a token of 6 characters, fewer than 16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Load(writeFile(t, validBase+"metrics:\n  "+c.metrics+"\n"), env)
			if err == nil {
				err = cfg.CheckFiles()
			}
			switch {
			case c.want == "" && err != nil:
				t.Errorf("err = %v, want it to load", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("err = %v, want %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
	// The environment turns it on as the file does.
	cfg, err := Load(writeFile(t, validBase), append(env, "COLLECTOR_METRICS__TAP__ENABLED=true", "COLLECTOR_METRICS__TAP__TOKEN_FILE="+good))
	if err != nil || !cfg.Metrics.Tap.Enabled || cfg.Metrics.Tap.TokenFile != good {
		t.Errorf("from the environment: %+v, %v", cfg.Metrics.Tap, err)
	}
}

// POST /-/reload follows /tap's rule (one rule, validateGuarded): on a
// non-loopback metrics.listen it needs a token file, or anyone who reaches
// the port could make the collector read its files again and restart its
// streams (the chart's reloadInPlace served it on 0.0.0.0 with none).
func TestReloadNeedsATokenOffLoopbackAsTapDoes(t *testing.T) {
	t.Parallel()
	env := []string{"COLLECTOR_API__SECRET=s"}
	good := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(good, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, metrics, want string
	}{
		{"off on 0.0.0.0", "listen: 0.0.0.0:9464", ""},
		{"on, loopback, no token", "listen: 127.0.0.1:9464\n  reload: {enabled: true}", ""},
		{"on, 0.0.0.0, no token", "listen: 0.0.0.0:9464\n  reload: {enabled: true}", "metrics.reload.token_file: must be set when metrics.reload.enabled"},
		{"on, :9464, no token", "listen: ':9464'\n  reload: {enabled: true}", "metrics.reload.token_file: must be set"},
		{"on, no listen", "listen: ''\n  reload: {enabled: true}", "metrics.reload.enabled: needs metrics.listen"},
		{"on, 0.0.0.0, token", "listen: 0.0.0.0:9464\n  reload: {enabled: true, token_file: " + good + "}", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Load(writeFile(t, validBase+"metrics:\n  "+c.metrics+"\n"), env)
			if err == nil {
				err = cfg.CheckFiles()
			}
			switch {
			case c.want == "" && err != nil:
				t.Errorf("err = %v, want it to load", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}
