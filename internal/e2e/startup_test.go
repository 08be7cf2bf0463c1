package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/status"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// runFailure is the error of the "collector run failed" line of JSON logs,
// "" when there is none.
func runFailure(logs string) string {
	for _, line := range strings.Split(logs, "\n") {
		var l struct{ Msg, Err string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "collector run failed" {
			return l.Err
		}
	}
	return ""
}

// notCheckpointToken is a token file that checkpoint.path names by
// mistake.
const notCheckpointToken = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LWVkZ2UtdG9rZW4.k9Xq\n"

// Issue 20: `check` says what `run` will say. A checkpoint.path that run
// refuses (/etc/hostname passed check with exit 0) fails check with run's
// exit code and run's very message, while every other line of the check
// (the API, the token, the sink) passes.
func TestCheckRefusesTheCheckpointPathRunRefusesWithRunsCodeAndMessage(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	cases := []struct {
		name string
		make func(t *testing.T, path string)
		code int
		want string
	}{
		{"a text file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("vm\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 2, "checkpoint.path: checkpoint file %s is not a checkpoint: it is not a bbolt file"},
		// Issue 29: none of a wrong file's bytes is shown (the first 24
		// were, a token's).
		{"a token file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(notCheckpointToken), 0o600); err != nil {
				t.Fatal(err)
			}
		}, 2, "checkpoint.path: checkpoint file %s is not a checkpoint: it is not a bbolt file (50 bytes; its content is not shown)"},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, 2, "checkpoint.path: checkpoint path %s is a directory"},
		{"an empty file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 1, "checkpoint file %s is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := harness.New(t, harness.Config{Sim: sim, Sources: []string{"dns"}, Start: time.Now().Add(-time.Hour)})
			path := c.CheckpointPath()
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			tc.make(t, path)
			want := fmt.Sprintf(tc.want, path)

			checkCode, checkOut := c.CLI(t, nil, "check", "--timeout", "5s")
			runCode, runOut := c.CLI(t, nil, "run", "--once")
			runErr := runFailure(runOut)
			if runCode != tc.code || !strings.HasPrefix(runErr, want) {
				t.Fatalf("run: exit %d, error %q\nwant exit %d and %q\n%s", runCode, runErr, tc.code, want, runOut)
			}
			if checkCode != runCode || !strings.Contains(checkOut, "FAIL  checkpoint "+path+": "+runErr+"\n") {
				t.Fatalf("check: exit %d, output:\n%s\nwant exit %d (run's) and the line\nFAIL  checkpoint %s: %s", checkCode, checkOut, runCode, path, runErr)
			}
			for i := 0; i+6 <= len(notCheckpointToken); i++ {
				if piece := notCheckpointToken[i : i+6]; strings.Contains(checkOut, piece) || strings.Contains(runOut, piece) {
					t.Fatalf("check or run shows %q of the token file:\n%s\n%s", piece, checkOut, runOut)
				}
			}
			// One FAIL line of the report (the last line, "collector check:
			// 1 check failed: see the FAIL lines...", names them).
			if strings.Count("\n"+checkOut, "\nFAIL  ") != 1 || !strings.Contains(checkOut, "ok    core API token") || !strings.Contains(checkOut, "ok    sink file") {
				t.Fatalf("check failed more than the checkpoint:\n%s", checkOut)
			}
		})
	}
}

// check beside a running collector: the checkpoint the collector holds
// passes (a copy is checked; no lock is taken from the collector), and the
// collector goes on and stops cleanly.
func TestCheckBesideARunningCollectorPassesAndLeavesItRunning(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Metrics: harness.FreeAddr(t)})
	p := c.Start(t)
	harness.WaitCommitted(t, p, c.Config().Metrics, start, nil, 1, 2*time.Minute)

	code, out := c.CLI(t, nil, "check", "--timeout", "5s")
	if code != 0 || !strings.Contains(out, "ok    checkpoint "+c.CheckpointPath()+": ") || !strings.Contains(out, "in use by a running collector") {
		t.Fatalf("check beside a running collector: exit %d\n%s", code, out)
	}
	// The collector goes on committing: every stream gets past start.
	harness.WaitCommitted(t, p, c.Config().Metrics, start, nil, 0, 2*time.Minute)
	if err := p.Stop(40 * time.Second); err != nil {
		t.Fatalf("SIGTERM after check: %v\n%s", err, p.Tail(20))
	}
	if strings.Contains(p.Logs(), "locked") {
		t.Fatalf("the collector met a lock:\n%s", p.Tail(20))
	}
}

// Issue 20: with one sink down at start, /healthz, /readyz and /state
// answer from the start of the process: /readyz names the sink that waits
// and why, /state shows the streams as the checkpoint holds them and says
// what the start waits for. A stop meanwhile is a clean stop (exit 0).
func TestTelemetryAnswersWhileASinkWaitsAtStart(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	down := harness.FreeAddr(t) // nobody listens: the broker is down
	sinks := fmt.Sprintf(`sinks:
  - name: archive
    type: file
    file:
      dir: %s
  - name: siem
    type: kafka
    kafka:
      brokers: [%s]
`, filepath.Join(t.TempDir(), "archive"), down)
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: []string{"dns"}, Sink: sinks, Metrics: harness.FreeAddr(t)})

	// A checkpoint from an earlier run: dns/acme is an hour in.
	k := record.Stream{Source: "dns", Account: "acme"}
	wm := start.Add(time.Hour)
	db, err := checkpoint.Open(c.CheckpointPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(context.Background(), k, checkpoint.State{Cursor: cursor.Cursor{Watermark: wm}, Delivered: 42}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	p := c.Start(t)
	addr := "http://" + c.Config().Metrics
	deadline := time.Now().Add(10 * time.Second)
	var healthz, readyz, state string
	var hCode, rCode, sCode int
	for {
		healthz, hCode = harness.HTTPGet(addr + "/healthz")
		readyz, rCode = harness.HTTPGet(addr + "/readyz")
		state, sCode = harness.HTTPGet(addr + "/state")
		var checks struct{ Checks map[string]string }
		_ = json.Unmarshal([]byte(readyz), &checks)
		var states []status.StreamState
		stateOK := sCode == http.StatusOK && json.Unmarshal([]byte(state), &states) == nil && len(states) == 2
		for _, s := range states {
			if s.Source == k.Source && s.Account == k.Account {
				stateOK = stateOK && s.Watermark.Equal(wm) && s.Delivered == 42
			}
			stateOK = stateOK && strings.Contains(s.Starting, "waiting for sink siem") && strings.Contains(s.Starting, "refused")
		}
		if hCode == http.StatusOK && rCode == http.StatusServiceUnavailable &&
			strings.Contains(checks.Checks["sink:siem"], "refused") && checks.Checks["sink:archive"] == "ok" && stateOK {
			break
		}
		if time.Now().After(deadline) || p.Err() != nil {
			t.Fatalf("within 10 s of the start, with sink siem down:\n/healthz %d %s\n/readyz %d %s\n/state %d %.2000s\nwant 200; 503 naming sink:siem; 200 with dns/acme at %s, 42 rows, waiting for sink siem\n%s",
				hCode, healthz, rCode, readyz, sCode, state, wm.Format(time.RFC3339), p.Tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// `collector state` reads the starting collector live.
	code, out := c.CLI(t, nil, "state")
	if code != 0 || !strings.Contains(out, "live, from the running collector") || !strings.Contains(out, "STARTING: waiting for sink siem") {
		t.Errorf("state while a sink waits: exit %d\n%s", code, out)
	}
	// A stop while a sink waits for its destination is a clean stop.
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM while sink siem waited: %v, want exit 0\n%s", err, p.Tail(20))
	}
}
