package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runCLI runs the binary with args and env and returns its exit code and
// output (stdout and stderr together).
func runCLI(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, collectorBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("run %v: %v", args, err)
	return -1, ""
}

// A bad configuration exits 2 with one line naming the key that is wrong.
func TestBadConfigurationsExit2NamingTheKey(t *testing.T) {
	base := "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: s\n"
	cases := []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"an unknown key", base + "sinks:\n  type: file\n", nil, `sinks: unknown key (did you mean "sink"?)`},
		{"a misspelt nested key", base + "pipeline:\n  bufer_records: 10\n", nil, `pipeline.bufer_records: unknown key (did you mean "buffer_records"?)`},
		{"a wrong type", base + "pipeline:\n  buffer_records: lots\n", nil, "pipeline.buffer_records"},
		{"max_window over 7 days", base + "sources:\n  dns:\n    max_window: 8d\n", nil, "sources.dns.max_window"},
		{"a missing secret", "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n", nil, "api.secret"},
		{"an unknown source", base + "sources:\n  dnss:\n    enabled: true\n", nil, "sources.dnss"},
		{"a token ttl over 24h", base + "  token_ttl: 25h\n", nil, "api.token_ttl"},
		{"an unknown sink", base + "sink:\n  type: s3\n", nil, "sink.type"},
		{"a bad broker address", base + "sink:\n  type: kafka\n  kafka:\n    brokers: [localhost]\n", nil, "sink.kafka.brokers"},
		{"a bad compression name", base + "sink:\n  type: kafka\n  kafka:\n    brokers: [k:9092]\n    compression: zip\n", nil, "sink.kafka.compression"},
		{"a missing SASL password", base + "sink:\n  type: kafka\n  kafka:\n    brokers: [k:9092]\n    sasl:\n      mechanism: SCRAM-SHA-512\n      username: u\n", nil, "sink.kafka.sasl.password"},
		{"a bad ClickHouse protocol", base + "sink:\n  type: clickhouse\n  clickhouse:\n    protocol: grpc\n", nil, "sink.clickhouse.protocol"},
		{"an unknown environment key", base, []string{"COLLECTOR_API__SECERT=x"}, "api.secert: unknown key"},
		{"a bad duration from the environment", base, []string{"COLLECTOR_SOURCES__DEFAULT__LAG=soon"}, "sources.default.lag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := runCLI(t, c.env, "run", "--config", p)
			if code != 2 || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, c.want)
			}
			if strings.Contains(out, "panic") || strings.Count(strings.TrimSpace(out), "\n") > 3 {
				t.Fatalf("want a short message, got:\n%s", out)
			}
		})
	}
}

// check prints the effective configuration with the secret redacted, gets a
// token and checks the sink; environment variables override the file.
func TestCheckRedactsSecretsAndHonoursTheEnvironment(t *testing.T) {
	sim := startSim(t, nil)
	s := newSetup(t, sim, time.Now().Add(-time.Hour), "")
	other := filepath.Join(t.TempDir(), "elsewhere")
	s.env = append(s.env, "COLLECTOR_SINK__FILE__DIR="+other)
	code, out := runCLI(t, s.environ(), "check", "--config", s.configPath())
	if code != 0 {
		t.Fatalf("check exit %d:\n%s", code, out)
	}
	for _, want := range []string{"[redacted]", "ok    core API token", "ok    sink file", other} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sim-secret") || strings.Contains(out, "sim-edge-token") {
		t.Fatalf("check printed a secret:\n%s", out)
	}
	if st := sim.Stats().Get("sim-admin", "token"); st.Requests != 1 {
		t.Errorf("check made %d token requests, want 1", st.Requests)
	}
	var data int64
	for _, c := range sim.Stats().Counters {
		if c.Functionality != "token" {
			data += c.Requests
		}
	}
	if data != 0 {
		t.Errorf("check made %d data requests, want none", data)
	}

	// A wrong secret fails the check, and the wrong secret is not shown.
	code, out = runCLI(t, append(s.environ(), "COLLECTOR_API__SECRET=wrong-secret-value"), "check", "--config", s.configPath())
	if code == 0 || strings.Contains(out, "wrong-secret-value") || !strings.Contains(out, "FAIL") {
		t.Fatalf("check with a wrong secret: exit %d\n%s", code, out)
	}
}

// SIGTERM while tailing: the collector drains, commits and exits 0; what it
// delivered up to its watermark is complete, and state reads it back.
func TestSIGTERMDrainsCommitsAndExits0(t *testing.T) {
	sim := startSim(t, nil)
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	s := newSetup(t, sim, start, "")
	p := s.startCollector(t)
	time.Sleep(3 * time.Second)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, 40*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, tail(p.logs.String(), 20))
	}
	out := readFileSink(t, s.outDir())
	compareWithTruth(t, sim, out, allStreams(), start, watermarks(t, s.checkpointPath()))

	code, st := runCLI(t, s.environ(), "state", "--config", s.configPath())
	if code != 0 || !strings.Contains(st, "dns") || !strings.Contains(st, "acme-dev") || strings.Contains(st, "sim-secret") {
		t.Fatalf("state exit %d:\n%s", code, st)
	}
	code, st = runCLI(t, s.environ(), "state", "--config", s.configPath(), "--reset", "dns/acme")
	if code != 0 || !strings.Contains(st, "reset 1 stream") {
		t.Fatalf("reset exit %d:\n%s", code, st)
	}
	if _, ok := watermarks(t, s.checkpointPath())[streamKey{"dns", "acme"}]; ok {
		t.Fatal("dns/acme still has a checkpoint after --reset")
	}
}
