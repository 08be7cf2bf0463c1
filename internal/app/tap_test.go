package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/config"
)

// check warns of an open /tap (issue 29 item 1), on "warn" lines as its
// other warnings: a token on a non-loopback address crosses the network
// in clear; no token on loopback is every local process's; the tap off, or
// on loopback with a token, says nothing. (On without a token off loopback
// does not load: config's test.)
func TestCheckWarnsOfAnOpenTap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, metrics, want string
	}{
		{"off, 0.0.0.0", "listen: 0.0.0.0:9464", ""},
		{"on, loopback, token", "listen: 127.0.0.1:9464\n  tap: {enabled: true, token_file: " + tok + "}", ""},
		{"on, loopback, no token", "listen: 127.0.0.1:9464\n  tap: {enabled: true}", "warn  metrics.tap: /tap is on without a token on 127.0.0.1:9464: every process of this host"},
		{"on, 0.0.0.0, token", "listen: 0.0.0.0:9464\n  tap: {enabled: true, token_file: " + tok + "}", "warn  metrics.tap: /tap is on at 0.0.0.0:9464, not a loopback address: its token and the records it streams cross the network in clear"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "c.yaml")
			body := "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\naccounts: [acme]\nmetrics:\n  " + c.metrics + "\n"
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(p, []string{"COLLECTOR_API__SECRET=s"})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := Check(t.Context(), cfg, Options{Stdout: &out}, CheckOptions{Offline: true}); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if c.want == "" && strings.Contains(got, "metrics.tap") {
				t.Errorf("check warns:\n%s", got)
			}
			if c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("check says:\n%s\nwant a line %q", got, c.want)
			}
		})
	}
	// The case Validate refuses is worded too, should it ever load.
	w := tapWarnings(config.MetricsConfig{Listen: "0.0.0.0:9464", Tap: config.TapConfig{Enabled: true}})
	if len(w) != 1 || !strings.Contains(w[0], "whoever reaches the port reads every record") {
		t.Errorf("tapWarnings on 0.0.0.0 without a token = %q", w)
	}
}
