package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// A bad configuration exits 2 with one line naming the key that is wrong.
func TestBadConfigurationsExit2NamingTheKey(t *testing.T) {
	t.Parallel()
	base := "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: s\n"
	cases := []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"an unknown key", base + "sinkk:\n  type: file\n", nil, `sinkk: unknown key (did you mean "sink"?)`},
		{"a misspelt nested key", base + "pipeline:\n  bufer_records: 10\n", nil, `pipeline.bufer_records: unknown key (did you mean "buffer_records"?)`},
		{"a wrong type", base + "pipeline:\n  buffer_records: lots\n", nil, `pipeline.buffer_records: is not a valid int (invalid syntax), got "lots"`},
		{"a wrong type in sinks[]", base + "sinks:\n  - {name: f, type: file, file: {dir: /tmp, max_bytes: much}}\n", nil, `sinks[0].file.max_bytes: is not a valid int64 (invalid syntax), got "much"`},
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
		// Issue 20: a base URL is scheme://host[:port][/path]; a between
		// filter's upper boundary is greater; a reference to an endless
		// file is refused, not read.
		{"a query in the API address", "api:\n  base_url: http://127.0.0.1:1/?sig=abc\n  key_id: k\n  secret: s\n", nil, "api.base_url: must not have a query"},
		{"a fragment in the edge address", base + "edge:\n  base_url: http://127.0.0.1:2/#x\n  token: t\n", nil, "edge.base_url: must not have a query (?...) or a fragment"},
		{"between with its boundaries reversed", base + "sources:\n  dns:\n    filters:\n      - {expression: between, field: mid, values: [\"9\", \"3\"]}\n", nil, "sources.dns.filters[0].values: between's upper boundary"},
		{"a secret from /dev/zero", "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: ${file:/dev/zero}\n", nil, "api.secret: ${file:/dev/zero}: file /dev/zero is not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := harness.RunCLI(t, c.env, "run", "--config", p)
			if code != 2 || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, c.want)
			}
			if strings.Contains(out, "panic") || strings.Count(strings.TrimSpace(out), "\n") > 3 {
				t.Fatalf("want a short message, got:\n%s", out)
			}
		})
	}
}

// check prints a summary of the configuration (check --print all of it,
// the secret redacted), gets a token, proves access to each core stream
// with one page, checks the sink and says what it spent of which budget
// (C4); environment variables override the file.
func TestCheckRedactsSecretsAndHonoursTheEnvironment(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	other := filepath.Join(t.TempDir(), "elsewhere")
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().Add(-time.Hour), Env: []string{"COLLECTOR_SINK__FILE__DIR=" + other}})
	code, printed := c.CLI(t, nil, "check", "--print")
	if code != 0 || !strings.Contains(printed, "[redacted]") || !strings.Contains(printed, other) {
		t.Fatalf("check --print exit %d, want the secret redacted and %s:\n%s", code, other, printed)
	}
	code, out := c.CLI(t, nil, "check")
	if code != 0 {
		t.Fatalf("check exit %d:\n%s", code, out)
	}
	for _, want := range []string{"ok    core API token", "ok    sink file", "check --print shows all of it"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	for _, o := range []string{out, printed} {
		if strings.Contains(o, harness.Secret) || strings.Contains(o, harness.EdgeToken) {
			t.Fatalf("check printed a secret:\n%s", o)
		}
	}
	// Issue 24: a summary, not the whole configuration, before the results.
	if n := strings.Count(out, "\n# "); n > 10 {
		t.Errorf("check printed %d lines of configuration, want a summary:\n%s", n, out)
	}
	if st := sim.Stats().Get("sim-admin", "token"); st.Requests != 1 {
		t.Errorf("check made %d token requests, want 1", st.Requests)
	}
	// C5: one first page per core stream proves the key may read it; no
	// more (the edge API is not asked: it has no request that moves no data).
	data := map[string]int64{}
	for _, cnt := range sim.Stats().Counters {
		if cnt.Functionality != "token" {
			data[cnt.Functionality] += cnt.Requests
		}
	}
	var core int
	for _, s := range c.Streams() {
		if !strings.HasPrefix(s.Source, "edge_") {
			core++
			if !strings.Contains(out, "ok    access of "+s.Source+"/"+s.Account+"\n") {
				t.Errorf("check does not report access of %s/%s", s.Source, s.Account)
			}
		}
	}
	var total int64
	for f, n := range data {
		total += n
		if strings.HasPrefix(f, "edge") {
			t.Errorf("check asked the edge API %d times (%s)", n, f)
		}
	}
	if core == 0 || total != int64(core) {
		t.Errorf("check made %d data requests %v, want one per core stream (%d)", total, data, core)
	}
	// It says what it spent, and of which buckets (C4).
	if want := fmt.Sprintf("# check spent %d API requests: 1 of the token endpoint's bucket, at most %d of each of 7 search buckets", total+1, len(c.Config().Accounts)); !strings.Contains(out, want) {
		t.Errorf("check output lacks %q:\n%s", want, out)
	}

	// A wrong secret fails the check, and the wrong secret is not shown.
	code, out = c.CLI(t, []string{"COLLECTOR_API__SECRET=wrong-secret-value"}, "check")
	if code == 0 || strings.Contains(out, "wrong-secret-value") || !strings.Contains(out, "FAIL") {
		t.Fatalf("check with a wrong secret: exit %d\n%s", code, out)
	}
}

// SIGTERM while tailing: the collector drains, commits and exits 0; what it
// delivered up to its watermark is complete, and state reads it back.
func TestSIGTERMDrainsCommitsAndExits0(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Metrics: harness.FreeAddr(t)})
	p := c.Start(t)
	harness.WaitCommitted(t, p, c.Config().Metrics, start, nil, 0, 2*time.Minute)
	p.Terminate()
	if err := p.Wait(t, 40*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.Tail(20))
	}
	c.Compare(t, c.ReadOutput(t), harness.AllStreams())

	code, st := c.CLI(t, nil, "state")
	if code != 0 || !strings.Contains(st, "dns") || !strings.Contains(st, "acme-dev") || strings.Contains(st, harness.Secret) {
		t.Fatalf("state exit %d:\n%s", code, st)
	}
	code, st = c.CLI(t, nil, "state", "--reset", "dns/acme")
	if code != 0 || !strings.Contains(st, "reset 1 stream") {
		t.Fatalf("reset exit %d:\n%s", code, st)
	}
	if _, ok := c.Watermarks(t)[record.Stream{Source: "dns", Account: "acme"}]; ok {
		t.Fatal("dns/acme still has a checkpoint after --reset")
	}
}

// A sources.*.start further back than api.max_history (C3) is said by
// check and check --offline, once for the key, with its value and what run
// will do; a start within reach is not.
func TestCheckWarnsOfAStartBeyondMaxHistory(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().Add(-time.Hour)})
	far := []string{"COLLECTOR_SOURCES__DNS__START=200d"}
	want := `warn  sources.dns.start: "200d" reaches further back than api.max_history (92d); run starts those streams at the oldest time the API serves`
	for _, args := range [][]string{{"check", "--offline"}, {"check"}} {
		code, out := c.CLI(t, far, args...)
		if code != 0 || strings.Count(out, want) != 1 || strings.Count(out, "warn  ") != 1 {
			t.Errorf("%v with sources.dns.start 200d: exit %d, want exit 0 and one %q:\n%s", args, code, want, out)
		}
		code, out = c.CLI(t, []string{"COLLECTOR_SOURCES__DNS__START=30d"}, args...)
		if code != 0 || strings.Contains(out, "warn  ") {
			t.Errorf("%v with sources.dns.start 30d: exit %d, want no warning:\n%s", args, code, out)
		}
	}
}
