package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Issue 29 item 8: a running collector whose api.secret_file and
// edge.token_file are rewritten, and whose key and edge token are then
// rotated on the platform (the old tokens revoked), goes on without a
// restart: every stream commits windows asked after the rotation, none is
// blocked or reports an error, the token endpoint never refused a secret,
// and the new secrets appear in no log line.
func TestRotatedSecretFilesAreUsedWithoutARestart(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	dir := t.TempDir()
	apiFile, edgeFile := filepath.Join(dir, "api-secret"), filepath.Join(dir, "edge-token")
	write := func(path, v string) {
		t.Helper()
		// As Kubernetes and an operator's script do: a new file renamed
		// over the old one.
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(apiFile, harness.Secret)
	write(edgeFile, harness.EdgeToken)
	addr := harness.FreeAddr(t)
	const lag = 2 * time.Minute
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().Add(-20 * time.Minute), Sources: []string{"dns", "edge_audit_events"},
		Lag: lag, Metrics: addr,
		Env: []string{"COLLECTOR_API__SECRET=", "COLLECTOR_API__SECRET_FILE=" + apiFile, "COLLECTOR_EDGE__TOKEN=", "COLLECTOR_EDGE__TOKEN_FILE=" + edgeFile}})
	p := c.Start(t)
	harness.WaitCommitted(t, p, addr, time.Now().Add(-lag), nil, 0, time.Minute)

	const apiSecret, edgeToken = "rotated-api-secret/0123456789+", "rotated-edge-token_0123456789"
	write(apiFile, apiSecret)
	write(edgeFile, edgeToken)
	if err := sim.SetKeySecret(harness.KeyID, apiSecret); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetEdgeToken(edgeToken); err != nil {
		t.Fatal(err)
	}
	sim.RevokeTokens("sim-admin")
	rotated := time.Now()

	st := harness.WaitState(t, p, addr, time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
		_, moved := harness.LiveWatermarks(st, rotated.Add(-lag+time.Second))
		return len(st) > 0 && len(moved) == len(st), "streams committed after the rotation: " + strings.Join(streamNames(moved), ", ")
	})
	for k, s := range st {
		if s.Blocked != nil || s.LastError != "" {
			t.Errorf("%s: blocked %v, last error %q", k, s.Blocked, s.LastError)
		}
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	logs := p.Logs()
	if tok := sim.Stats().Get("sim-admin", "token"); tok.Unauthorized != 0 || tok.Requests < 2 {
		t.Errorf("token endpoint: %d requests, %d refused; want a new token with the new secret and no refusal", tok.Requests, tok.Unauthorized)
	}
	edgeRefused := sim.Stats().Get("", "edge").Unauthorized
	if edgeRefused == 0 {
		t.Errorf("the edge API never refused the old token: the rotation was not exercised")
	}
	for _, s := range []string{apiSecret, edgeToken, harness.Secret, harness.EdgeToken} {
		if strings.Contains(logs, s) {
			t.Errorf("a secret in the logs: %q\n%s", s, harness.Tail(logs, 20))
		}
	}
	t.Logf("%d streams committed after the rotation; %d edge requests refused the old token", len(st), edgeRefused)
}

// streamNames writes streams as source/account.
func streamNames(ks []record.Stream) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.String()
	}
	return out
}
