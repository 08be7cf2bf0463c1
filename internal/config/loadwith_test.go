package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/source/catalog"
)

const validBase = "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n"

// Seven mistakes of the three kinds (unknown keys, wrong types, wrong
// values) are reported together, one line each naming its key.
func TestLoadWith_ReportsEveryKindOfProblemInOnePass(t *testing.T) {
	p := writeFile(t, validBase+`  limt: 3
  page_rows: many
  timeout: 7
pipeline:
  bufer_records: 10
sources:
  dns:
    max_window: 8d
  default:
    lag: soon
log:
  level: loud
`)
	_, err := LoadWith(p, []string{"COLLECTOR_API__SECRET=s"}, LoadOptions{})
	lines := Lines(err, 50)
	want := []string{"api.limt: unknown key", "pipeline.bufer_records: unknown key", "api.page_rows: is not a valid int",
		"api.timeout: duration 7 has no unit", "sources.default.lag: invalid duration", "sources.dns.max_window: must be at most 7 days",
		"log.level: unknown level"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, w)
		}
		if !found {
			t.Errorf("no line starts with %q:\n%s", w, strings.Join(lines, "\n"))
		}
	}
}

func TestLines_CapsTheReportAndCountsTheRest(t *testing.T) {
	var b strings.Builder
	b.WriteString(validBase)
	for i := range 60 {
		fmt.Fprintf(&b, "  unknown%02d: 1\n", i)
	}
	_, err := LoadWith(writeFile(t, b.String()), []string{"COLLECTOR_API__SECRET=s"}, LoadOptions{})
	lines := Lines(err, 50)
	if len(lines) != 51 || lines[50] != "... and 10 more problems" {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestLoadWith_ExpandsReferencesInTheFile(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := writeFile(t, `api:
  base_url: ${API_URL}
  key_id: ${env:KEY_ID}
  secret: ${file:`+secretFile+`}
  user: ${USER_NAME:-svc}
  secret_header: X-$${NOT_A_VAR}-$HOME
accounts: ${ACCOUNTS}
sources:
  default:
    lag: ${LAG}
`)
	env := []string{"API_URL=http://127.0.0.1:9", "KEY_ID=kid", "ACCOUNTS=[acme, acme-dev]", "LAG=45m"}
	l, err := LoadWith(p, env, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.API.BaseURL != "http://127.0.0.1:9" || c.API.KeyID != "kid" || c.API.Secret.Reveal() != "from-a-file" ||
		c.API.User != "svc" || c.API.SecretHeader != "X-${NOT_A_VAR}-$HOME" ||
		!reflect.DeepEqual(c.Accounts, []string{"acme", "acme-dev"}) || *c.Sources["default"].Lag != 45*time.Minute {
		t.Fatalf("expanded %+v %v %v", c.API, c.Accounts, *c.Sources["default"].Lag)
	}
	dump, err := c.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dump), "from-a-file") || !strings.Contains(string(dump), "http://127.0.0.1:9") {
		t.Fatalf("the dump shows resolved values but never a secret:\n%s", dump)
	}

	// Unset: an error naming the variable and the key, never a value.
	_, err = LoadWith(p, []string{"API_URL=http://127.0.0.1:9", "ACCOUNTS=a", "LAG=1m"}, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "api.key_id: environment variable KEY_ID is not set") {
		t.Fatalf("unset variable: %v", err)
	}
	// A missing file names the key and the file.
	p2 := writeFile(t, validBase+"  secret: ${file:"+filepath.Join(dir, "nope")+"}\n")
	if _, err := LoadWith(p2, nil, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "api.secret: ${file:") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing file: %v", err)
	}
	// An unterminated reference.
	p3 := writeFile(t, validBase+"  user: ${OOPS\n")
	if _, err := LoadWith(p3, []string{"COLLECTOR_API__SECRET=s"}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "api.user:") {
		t.Fatalf("unterminated: %v", err)
	}
}

// The offline check needs no secret, reads no file and tolerates unset
// variables, whose keys it lists as unchecked.
func TestLoadWith_OfflineNeedsNoSecretsFilesOrVariables(t *testing.T) {
	p := writeFile(t, validBase+`  secret_file: /nonexistent/secret
edge:
  base_url: http://127.0.0.1:2
  token: ${EDGE_TOKEN}
sink:
  type: kafka
  kafka:
    brokers: [k:9092]
    sasl:
      mechanism: PLAIN
      username: u
      password: ${file:/nonexistent/password}
`)
	l, err := LoadWith(p, nil, LoadOptions{Offline: true})
	if err != nil {
		t.Fatalf("offline: %v", err)
	}
	if len(l.Notes) != 2 || !strings.Contains(l.Notes[0], "edge.token: ${EDGE_TOKEN}") || !strings.Contains(l.Notes[1], "sink.kafka.sasl.password: ${file:") {
		t.Fatalf("notes %q", l.Notes)
	}
	if _, err := LoadWith(p, nil, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "EDGE_TOKEN") {
		t.Fatalf("online: %v", err)
	}
	// Offline still finds what is wrong.
	bad := writeFile(t, validBase+"log:\n  level: loud\n")
	if _, err := LoadWith(bad, nil, LoadOptions{Offline: true}); err == nil || !strings.Contains(err.Error(), "log.level") {
		t.Fatalf("offline bad: %v", err)
	}
}

// A secret set through the environment is a string, whatever it looks
// like; list keys still take [a, b].
func TestLoad_ASecretFromTheEnvironmentIsNeverAList(t *testing.T) {
	env := []string{"COLLECTOR_API__SECRET=[a,b]", "COLLECTOR_ACCOUNTS=[x, y]", "COLLECTOR_API__USER=[u]"}
	cfg, err := Load(writeFile(t, validBase), env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.API.Secret.Reveal() != "[a,b]" || cfg.API.User != "[u]" || !reflect.DeepEqual(cfg.Accounts, []string{"x", "y"}) {
		t.Fatalf("secret %q user %q accounts %v", cfg.API.Secret.Reveal(), cfg.API.User, cfg.Accounts)
	}
}

// What Dump prints loads back as the same configuration once the secrets
// are supplied again; until then the placeholder is refused.
func TestDump_LoadsBackAsTheSameConfiguration(t *testing.T) {
	p := writeFile(t, `api:
  base_url: https://api.example.test
  key_id: k
  timeout: 2m5s
  rate: {limit: 240, period: 30m}
accounts: [acme, acme-dev]
edge:
  base_url: https://edge.example.test
sources:
  default:
    start: 2026-11-20T00:00:00Z
    lag: 10m
  dns:
    max_window: 2d
    returns: [createdTime, fqdn]
  user_logins:
    enabled: false
    filters:
      - {expression: eq, field: user, value: bob}
sink:
  type: kafka
  kafka:
    brokers: [k1:9092, k2:9092]
    sasl: {mechanism: PLAIN, username: u}
simulator:
  settings:
    seed: 7
`)
	env := []string{"COLLECTOR_API__SECRET=s1", "COLLECTOR_EDGE__TOKEN=t1", "COLLECTOR_SINK__KAFKA__SASL__PASSWORD=p1"}
	first, err := Load(p, env)
	if err != nil {
		t.Fatal(err)
	}
	dump, err := first.Dump()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s1", "t1", "p1", "null"} {
		if strings.Contains(string(dump), ": "+s+"\n") {
			t.Fatalf("dump shows %q:\n%s", s, dump)
		}
	}
	printed := writeFile(t, string(dump))
	second, err := Load(printed, env)
	if err != nil {
		t.Fatalf("%v\n%s", err, dump)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("loaded back differently:\n%+v\n%+v\n%s", first, second, dump)
	}
	for _, spec := range catalog.Specs() {
		if a, b := first.Sources.Resolve(spec.Name), second.Sources.Resolve(spec.Name); !reflect.DeepEqual(a, b) {
			t.Errorf("%s resolves to %+v, then %+v", spec.Name, a, b)
		}
	}
	again, _ := second.Dump()
	if string(again) != string(dump) {
		t.Fatalf("second dump differs:\n%s\n---\n%s", dump, again)
	}

	_, err = Load(printed, env[1:])
	if err == nil || !strings.Contains(err.Error(), "api.secret: holds [redacted]") || !strings.Contains(err.Error(), "COLLECTOR_API__SECRET") {
		t.Fatalf("placeholder secret: %v", err)
	}
}

func TestFormatDurationLoadsBack(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", time.Hour: "1h", 90 * time.Minute: "1h30m", 125 * time.Second: "2m5s",
		7 * 24 * time.Hour: "7d", 25 * time.Hour: "25h", 500 * time.Millisecond: "500ms", 2 * time.Minute: "2m"} {
		got := FormatDuration(d)
		if got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
		if back, err := ParseDuration(got); err != nil || back != d {
			t.Errorf("%q reads back as %v, %v", got, back, err)
		}
	}
}

// state needs no secrets: an unset secret, or a secret's unresolved
// reference, is fine; any other unset variable is not.
func TestLoadWith_SecretsOptionalSparesOnlySecrets(t *testing.T) {
	p := writeFile(t, validBase+"  secret: ${API_SECRET}\ncheckpoint:\n  path: ${DATA_DIR}/checkpoint.db\n")
	l, err := LoadWith(p, []string{"DATA_DIR=/var/lib/c"}, LoadOptions{SecretsOptional: true})
	if err != nil || l.Config.Checkpoint.Path != "/var/lib/c/checkpoint.db" || len(l.Notes) != 0 {
		t.Fatalf("state load: %v %q %q", err, l.Config.Checkpoint.Path, l.Notes)
	}
	if _, err := LoadWith(p, nil, LoadOptions{SecretsOptional: true}); err == nil || !strings.Contains(err.Error(), "checkpoint.path: environment variable DATA_DIR") {
		t.Fatalf("unset non-secret variable: %v", err)
	}
}

// BenchmarkLoadWith loads the reference file, every key of the
// configuration, the way every command starts.
func BenchmarkLoadWith(b *testing.B) {
	p := filepath.Join("..", "..", "configs", "collector.yaml")
	env := []string{"COLLECTOR_API__SECRET=s"}
	for b.Loop() {
		if _, err := LoadWith(p, env, LoadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
