package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// The operator's day: what a team moving from Filebeat, Vector or the
// OpenTelemetry Collector does with the binary before and while it runs.

// writeConfig writes body as a configuration file of its own.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "collector.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// noSecrets is an environment without the collector's variables, as in a
// CI job that lints a file.
func noSecrets() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COLLECTOR_") {
			env = append(env, kv)
		}
	}
	return env
}

// check --offline lints a file as CI does: no secret set, the secret
// files absent, the API unreachable, and still exit 0; a bad key exits 2
// naming it.
func TestOperator_CheckOfflineNeedsNoSecretsNoFilesNoNetwork(t *testing.T) {
	t.Parallel()
	good := writeConfig(t, `api:
  base_url: https://api.invalid.example   # never resolved offline
  key_id: k
  secret: ${API_SECRET}
edge:
  base_url: https://edge.invalid.example
  token_file: /nonexistent/edge-token
sink:
  type: kafka
  kafka:
    brokers: [kafka.invalid.example:9092]
    sasl: {mechanism: SCRAM-SHA-512, username: svc, password_file: /nonexistent/kafka-password}
    tls: {enabled: true, ca_file: /nonexistent/ca.pem}
`)
	code, out := harness.RunCLIEnv(t, noSecrets(), "check", "--offline", "--config", good)
	if code != 0 || !strings.Contains(out, "configuration valid, 9 streams (offline") || !strings.Contains(out, "api.secret: ${API_SECRET} is not resolved offline") {
		t.Fatalf("offline check of a good file without secrets: exit %d\n%s", code, out)
	}
	// Online, the same file is refused for what offline left out.
	if code, out := harness.RunCLIEnv(t, noSecrets(), "check", "--config", good); code != 2 || !strings.Contains(out, "API_SECRET") {
		t.Fatalf("online check without the variable: exit %d\n%s", code, out)
	}

	bad := writeConfig(t, "api:\n  base_url: https://api.invalid.example\n  key_id: k\n  pag_rows: 3\n")
	code, out = harness.RunCLIEnv(t, noSecrets(), "check", "--offline", "--config", bad)
	if code != 2 || !strings.Contains(out, `config: api.pag_rows: unknown key (did you mean "page_rows"?)`) {
		t.Fatalf("offline check of a bad key: exit %d\n%s", code, out)
	}
}

// A file with seven mistakes of the three kinds (unknown keys, wrong
// types, wrong values) gets seven lines, one per mistake, in one run.
func TestOperator_SevenMistakesSevenLinesInOneRun(t *testing.T) {
	t.Parallel()
	p := writeConfig(t, `api:
  base_url: http://127.0.0.1:1
  key_id: k
  limt: 3                  # 1 unknown key
  page_rows: many          # 2 wrong type
  timeout: 7               # 3 wrong type (a duration without unit)
pipeline:
  bufer_records: 10        # 4 unknown key
sources:
  dns:
    max_window: 8d         # 5 wrong value: over the API's 7 days
log:
  level: loud              # 6 wrong value
  format: xml              # 7 wrong value
`)
	for _, args := range [][]string{{"check", "--offline"}, {"run"}} {
		code, out := harness.RunCLI(t, []string{"COLLECTOR_API__SECRET=s"}, append(args, "--config", p)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 2 || len(lines) != 7 {
			t.Fatalf("%v: exit %d, %d lines, want 2 and 7:\n%s", args, code, len(lines), out)
		}
		for _, key := range []string{"api.limt", "api.page_rows", "api.timeout", "pipeline.bufer_records", "sources.dns.max_window", "log.level", "log.format"} {
			if !strings.Contains(out, "config: "+key+": ") {
				t.Errorf("%v: no line names %s:\n%s", args, key, out)
			}
		}
	}
}

// ${VAR} and ${file:PATH} in the file are resolved; an unset variable is
// an error naming it and its key; a secret from the environment that looks
// like a list is a secret all the same.
func TestOperator_VariablesAndFilesInTheConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key-id")
	if err := os.WriteFile(keyFile, []byte("key-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := writeConfig(t, `api:
  base_url: ${API_URL}
  key_id: ${file:`+keyFile+`}
  user: price-$$5-$${LITERAL}
accounts: ${ACCOUNTS}
`)
	env := []string{"API_URL=http://127.0.0.1:9", "ACCOUNTS=[acme, acme-dev]", "COLLECTOR_API__SECRET=[a,b]"}
	code, out := harness.RunCLI(t, env, "check", "--print", "--config", p)
	if code != 0 {
		t.Fatalf("check --print: exit %d\n%s", code, out)
	}
	// The value price-$$5-${LITERAL} prints with its ${ escaped, so that
	// the print loads back as the same value (issue 20): printing the
	// print gives the same text.
	for _, want := range []string{"base_url: http://127.0.0.1:9", "key_id: key-from-file", "user: price-$$5-$${LITERAL}", "- acme\n  - acme-dev\n", "secret: '[redacted]'"} {
		if !strings.Contains(out, want) {
			t.Errorf("the print lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[a,b]") {
		t.Fatalf("the print shows the secret:\n%s", out)
	}
	printed := writeConfig(t, out)
	if code, again := harness.RunCLI(t, append(env, "LITERAL=changed"), "check", "--print", "--config", printed); code != 0 || again != out {
		t.Fatalf("the print of the print (exit %d) differs:\n%s\n---\n%s", code, out, again)
	}

	code, out = harness.RunCLI(t, []string{"ACCOUNTS=acme", "COLLECTOR_API__SECRET=s"}, "run", "--config", p)
	if code != 2 || !strings.Contains(out, "config: api.base_url: environment variable API_URL is not set") {
		t.Fatalf("unset variable: exit %d\n%s", code, out)
	}
}

// What check --print prints loads back as the same configuration with the
// same streams: printing the print gives the same text, resolved settings
// of every stream included, and the collector runs on it.
func TestOperator_PrintLoadsBackTheSameConfigurationAndStreams(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().Add(-2 * time.Hour), Sources: []string{"dns", "edge_alerts"},
		Extra: "pipeline:\n  buffer_records: 20000\n", Env: []string{"COLLECTOR_SOURCES__DNS__MAX_WINDOW=2h"}})
	code, first, errOut := c.CLIOut(t, nil, "check", "--print")
	if code != 0 || errOut != "" {
		t.Fatalf("check --print: exit %d\n%s%s", code, first, errOut)
	}
	if strings.Contains(first, "null") || strings.Contains(first, harness.Secret) {
		t.Fatalf("the print holds null or a secret:\n%s", first)
	}
	// Edge sources are one stream per edge token (C6), under edge.account.
	streams := regexp.MustCompile(`(?m)^#   (dns: \{accounts: \[acme, acme-dev\]|edge_alerts: \{accounts: \[edge\]).*$`).FindAllString(first, -1)
	if len(streams) != 2 || !strings.Contains(streams[0], "max_window: 2h") {
		t.Fatalf("stream lines %q in:\n%s", streams, first)
	}
	printed := filepath.Join(t.TempDir(), "printed.yaml")
	if err := os.WriteFile(printed, []byte(first), 0o600); err != nil {
		t.Fatal(err)
	}
	// The secrets come back through the environment, as the print says.
	env := []string{"COLLECTOR_API__SECRET=" + harness.Secret, "COLLECTOR_EDGE__TOKEN=" + harness.EdgeToken}
	code, second := harness.RunCLI(t, env, "check", "--print", "--config", printed)
	if code != 0 || second != first {
		t.Fatalf("the print of the print differs (exit %d):\n%s\n---\n%s", code, first, second)
	}
	if code, out := harness.RunCLI(t, env, "check", "--config", printed); code != 0 || !strings.Contains(out, "ok    3 streams configured") {
		t.Fatalf("check of the printed file: exit %d\n%s", code, out)
	}
	// Without the secrets, the [redacted] placeholder is refused.
	if code, out := harness.RunCLI(t, nil, "check", "--config", printed); code != 2 || !strings.Contains(out, "api.secret: holds [redacted]") {
		t.Fatalf("placeholder secret: exit %d\n%s", code, out)
	}
}

// state --json is JSON on standard output, the notes on standard error;
// --watch off a terminal prints one snapshot after another.
func TestOperator_StateJSONParsesAndWatchPrintsSnapshots(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().Add(-3 * time.Hour), Sources: []string{"dns"}})
	c.RunOnce(t, 2*time.Minute)

	code, stdout, stderr := c.CLIOut(t, nil, "state", "--json")
	if code != 0 {
		t.Fatalf("state --json: exit %d\n%s%s", code, stdout, stderr)
	}
	var states []struct {
		Source    string `json:"source"`
		Account   string `json:"account"`
		Delivered int64  `json:"rows_delivered"`
		CaughtUp  bool   `json:"caught_up"`
	}
	if err := json.Unmarshal([]byte(stdout), &states); err != nil {
		t.Fatalf("state --json is not JSON: %v\n%s", err, stdout)
	}
	if len(states) != 2 || states[0].Source != "dns" || states[0].Delivered == 0 || !strings.Contains(stderr, "from the checkpoint") {
		t.Fatalf("states %+v, notes %q", states, stderr)
	}

	// The secrets are not needed to read the state.
	if code, out := harness.RunCLIEnv(t, noSecrets(), "state", "--config", c.ConfigPath()); code != 0 || !strings.Contains(out, "acme-dev") {
		t.Fatalf("state without secrets: exit %d\n%s", code, out)
	}

	for _, args := range [][]string{{"state", "--watch", "--interval", "100ms"}, {"state", "--watch", "--json", "--interval", "100ms"}} {
		var out simtest.SyncBuffer
		p := c.StartCLI(t, &out, nil, args...)
		deadline := time.Now().Add(30 * time.Second)
		snapshots := func() int {
			if args[2] == "--json" {
				return strings.Count(out.String(), "\n")
			}
			return strings.Count(out.String(), "collector state at ")
		}
		for snapshots() < 2 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if err := p.Stop(10 * time.Second); err != nil {
			t.Fatalf("%v stopped: %v\n%s", args, err, p.Logs())
		}
		if n := snapshots(); n < 2 {
			t.Fatalf("%v: %d snapshots:\n%s", args, n, out.String())
		}
		if args[2] == "--json" {
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if !json.Valid([]byte(line)) {
					t.Fatalf("--watch --json line is not JSON: %q", line)
				}
			}
		}
	}
}

// On a terminal with text logs, run shows a bar per source with percent,
// rate and ETA, the logs above it; --no-progress and JSON logs turn it
// off.
func TestOperator_ProgressBarsOnATerminal(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().Add(-6 * time.Hour)
	text := []string{"COLLECTOR_LOG__FORMAT=text"}
	bar := regexp.MustCompile(`(?m)^dns\s+\[[=>+-]+\]\s+\d+\.\d%\s+\S+ rows/s\s+ETA `)

	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: []string{"dns", "audit_logs"}})
	code, out := c.RunTerminal(t, 2*time.Minute, text, "run", "--once")
	if code != 0 || !bar.MatchString(out) || !strings.Contains(out, "audit_logs") || !strings.Contains(out, "100.0%") {
		t.Fatalf("run on a terminal: exit %d, no bars with percent and ETA:\n%s", code, out)
	}
	if !strings.Contains(out, "msg=done") || strings.Index(out, "msg=done") < strings.LastIndex(out, "rows/s") {
		t.Fatalf("the last log line is not below the last bars:\n%s", out)
	}

	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"--no-progress", text, []string{"run", "--once", "--no-progress"}},
		{"JSON logs", nil, []string{"run", "--once"}},
	} {
		c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: []string{"dns"}})
		code, out := c.RunTerminal(t, 2*time.Minute, tc.env, tc.args...)
		if code != 0 || strings.Contains(out, "ETA ") || strings.Contains(out, "rows/s") || !strings.Contains(out, "done") {
			t.Fatalf("%s: exit %d, want no bars:\n%s", tc.name, code, out)
		}
	}
}
