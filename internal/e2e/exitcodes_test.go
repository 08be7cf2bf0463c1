package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Every configuration problem exits 2 with one line naming its key; a
// damaged checkpoint is a runtime failure (exit 1) that says how to
// recover. docs/commands.md promises both (the README says so in short).
func TestExitCodesOfHostileConfigurations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty-secret")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notBolt := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notBolt, []byte("this is not a checkpoint, it is a text file that is long enough to be looked at\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.db")
	if err := os.WriteFile(zero, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	withCheckpoint := func(path, extra string) string {
		return "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: s\nmetrics:\n  listen: \"\"\nsink:\n  file:\n    dir: " + filepath.Join(dir, "out") + "\ncheckpoint:\n  path: " + path + "\n" + extra
	}
	base := func(extra string) string { return withCheckpoint(filepath.Join(t.TempDir(), "cp.db"), extra) }
	noSecret := "sink:\n  file:\n    dir: " + filepath.Join(dir, "out") + "\napi:\n  base_url: http://127.0.0.1:1\n  key_id: k\n"
	cases := []struct {
		name, yaml string
		code       int
		want       string
	}{
		{"a secret file that does not exist", noSecret + "  secret_file: " + filepath.Join(dir, "missing") + "\n", 2, "api.secret_file: file"},
		{"a secret file that is a directory", noSecret + "  secret_file: " + dir + "\n", 2, "api.secret_file"},
		{"an empty secret file", noSecret + "  secret_file: " + empty + "\n", 2, "api.secret_file: file " + empty + " is empty"},
		{"an overlap longer than a window", base("sources:\n  default:\n    overlap: 30d\n"), 2, "sources.default.overlap"},
		{"a metrics address without a port", strings.Replace(base(""), `listen: ""`, "listen: nohost", 1), 2, "metrics.listen"},
		{"a metrics port out of range", strings.Replace(base(""), `listen: ""`, "listen: 127.0.0.1:99999", 1), 2, "metrics.listen"},
		{"a failing-after time under a second", strings.Replace(base(""), `listen: ""`, "listen: \"\"\n  failing_after: 10ms", 1), 2, "metrics.failing_after: must be at least 1s"},
		{"port 0 in the API address", strings.Replace(base(""), "127.0.0.1:1", "127.0.0.1:0", 1), 2, "api.base_url"},
		{"port 99999 in the API address", strings.Replace(base(""), "127.0.0.1:1", "127.0.0.1:99999", 1), 2, "api.base_url"},
		{"a newline in an account name", base("accounts: [\"acme\\nevil\"]\n"), 2, "accounts[0]"},
		{"a checkpoint path that is a text file", withCheckpoint(notBolt, ""), 2, "checkpoint.path"},
		{"a checkpoint path that is a directory", withCheckpoint(dir, ""), 2, "checkpoint.path"},
		{"a zero-length checkpoint", withCheckpoint(zero, ""), 1, "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			code, out := harness.RunCLI(t, nil, "run", "--once", "--config", p)
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d after %s, output:\n%s\nwant exit %d and %q", code, time.Since(start).Round(time.Millisecond), out, c.code, c.want)
			}
			if strings.Contains(out, "panic") || strings.Contains(out, "SIGBUS") {
				t.Fatalf("crashed:\n%s", out)
			}
		})
	}
}

// check names the cause of a failed connection within seconds: here the
// TCP connection is refused.
func TestCheckReportsAnUnreachableAPIQuickly(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "c.yaml")
	cfg := "api:\n  base_url: http://u:userinfo-secret@127.0.0.1:1\n  key_id: k\n  secret: s\nmetrics:\n  listen: \"\"\nsink:\n  file:\n    dir: " + filepath.Join(t.TempDir(), "out") + "\ncheckpoint:\n  path: " + filepath.Join(t.TempDir(), "cp.db") + "\n"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, out := harness.RunCLI(t, nil, "check", "--config", p, "--timeout", "3s")
	took := time.Since(start)
	if code != 1 || !strings.Contains(out, "TCP: cannot connect") || !strings.Contains(out, "refused") {
		t.Fatalf("check: exit %d after %s:\n%s", code, took, out)
	}
	if strings.Contains(out, "userinfo-secret") {
		t.Fatalf("check printed the password of api.base_url:\n%s", out)
	}
	if took > 20*time.Second {
		t.Fatalf("check took %s to report a refused connection", took)
	}
}

// SIGTERM during `run --once` is a graceful stop, not a failure: exit 0,
// as docs/commands.md and the README say, and what was delivered is complete.
func TestSIGTERMDuringOnceExits0(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-10 * 24 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, PageRows: 5000, Rate: harness.Rate{Limit: 20, Period: 5 * time.Second},
		Metrics: harness.FreeAddr(t)})
	p := c.Start(t, "--once")
	// SIGTERM once some stream committed a watermark (a sleep of a fixed
	// time was too short on a loaded machine), well before the run ends.
	harness.WaitCommitted(t, p, c.Config().Metrics, start, harness.Streams(harness.CoreSources(), harness.Accounts()), 1, time.Minute)
	p.Terminate()
	if err := p.Wait(t, 60*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM in --once: %v\n%s", err, p.Tail(20))
	}
	compareCommitted(t, sim, c, p, start, "SIGTERM")
}

// compareCommitted checks, after a graceful stop by signal, that the
// streams that committed something are complete up to their watermark
// (the rest continue at the next run), and that some stream did.
func compareCommitted(t *testing.T, sim *apisim.Server, c *harness.Collector, p *harness.Process, start time.Time, signal string) {
	t.Helper()
	wms := c.Watermarks(t)
	var moved []record.Stream
	for _, k := range harness.AllStreams() {
		if wms[k].Watermark.After(start) {
			moved = append(moved, k)
		}
	}
	if len(moved) == 0 {
		t.Fatalf("no stream committed anything before %s\n%s", signal, p.Tail(20))
	}
	harness.CompareWithTruth(t, sim, c.ReadOutput(t), moved, start, wms)
}

// SIGHUP reloads the configuration (issue 33, reload_test.go); sent while
// the collector stops, twice over, it is ignored: the drain is not cut
// short. Exit 0, no .part file, and what was delivered is complete up to
// the committed watermarks (issue 29 item 7).
func TestSIGHUPWhileStoppingDoesNotCutTheDrainShort(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-10 * 24 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, PageRows: 5000, Rate: harness.Rate{Limit: 20, Period: 5 * time.Second},
		Metrics: harness.FreeAddr(t)})
	p := c.Start(t)
	harness.WaitCommitted(t, p, c.Config().Metrics, start, harness.Streams(harness.CoreSources(), harness.Accounts()), 1, time.Minute)
	p.Terminate()
	// Once the stop is under way (a SIGHUP pending with the SIGTERM could
	// be delivered first: the lower number goes first).
	for deadline := time.Now().Add(time.Minute); !strings.Contains(p.Logs(), `"msg":"stopping"`); {
		if time.Now().After(deadline) {
			t.Fatalf("no stop logged after SIGTERM\n%s", p.Tail(20))
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Signal(syscall.SIGHUP)
	p.Signal(syscall.SIGHUP) // a reload sent twice does not cut the drain short
	if err := p.Wait(t, 60*time.Second); err != nil {
		t.Fatalf("exit after SIGHUP: %v\n%s", err, p.Tail(20))
	}
	if !strings.Contains(p.Logs(), "already stopping gracefully") || strings.Contains(p.Logs(), "reloading the configuration") {
		t.Errorf("a SIGHUP while stopping was not ignored\n%s", p.Tail(20))
	}
	err := filepath.WalkDir(c.OutDir(), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".part") {
			t.Errorf("a .part file left after SIGHUP: %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	compareCommitted(t, sim, c, p, start, "SIGHUP")
}

// The secret files of SASL OAUTHBEARER and AWS_MSK_IAM are read at start
// like every other secret file: a missing one is a configuration error
// naming its key (exit 2), not a failure at the first connection.
func TestMissingKafkaSASLSecretFilesExit2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: s\nmetrics:\n  listen: \"\"\ncheckpoint:\n  path: " +
		filepath.Join(dir, "cp.db") + "\nsink:\n  type: kafka\n  kafka:\n    brokers: [127.0.0.1:1]\n    sasl:\n"
	for _, c := range []struct{ name, sasl, want string }{
		{"an OAuth token file", "      mechanism: OAUTHBEARER\n      oauth:\n        token_file: " + filepath.Join(dir, "nope") + "\n", "sink.kafka.sasl.oauth.token_file"},
		{"an AWS secret key file", "      mechanism: AWS_MSK_IAM\n      aws:\n        access_key_id: AKIA\n        secret_access_key_file: " + filepath.Join(dir, "nope") + "\n", "sink.kafka.sasl.aws.secret_access_key_file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(base+c.sasl), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := harness.RunCLI(t, nil, "run", "--once", "--config", p)
			if code != 2 || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit 2 naming %s", code, out, c.want)
			}
		})
	}
}

// `check --print` and `check` refuse a ${file:PATH} that is not a small
// regular file with exit 2 and a line naming the key and the path, at
// once (issue 20): /dev/zero grew `check --print` to 7.4 GB in 30 s, a
// named pipe hung it.
func TestCheckRefusesAnEndlessOrBlockingSecretFile(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", fifo} {
		for _, args := range [][]string{{"check", "--print"}, {"check"}} {
			t.Run(strings.Join(args, " ")+" "+filepath.Base(path), func(t *testing.T) {
				t.Parallel()
				p := filepath.Join(t.TempDir(), "c.yaml")
				cfg := "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: ${file:" + path + "}\nmetrics:\n  listen: \"\"\n"
				if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				code, out := harness.RunCLI(t, nil, append(args, "--config", p)...)
				want := "config: api.secret: ${file:" + path + "}: file " + path + " is not a regular file"
				if code != 2 || !strings.Contains(out, want) {
					t.Fatalf("exit %d after %s, output:\n%s\nwant exit 2 and %q", code, time.Since(start).Round(time.Millisecond), out, want)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Fatalf("took %s", d)
				}
			})
		}
	}
}
