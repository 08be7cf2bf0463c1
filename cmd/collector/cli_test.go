package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/shard"
)

// cli runs the command line in-process.
func cli(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// A bad command line is exit 2 with what was meant; help and version are
// exit 0 on standard output; no command is the usage and exit 2.
func TestCommandLineMannersAndExitCodes(t *testing.T) {
	t.Setenv("COLLECTOR_CONFIG", "")
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no command", nil, exitUsage, "", "Available Commands:"},
		{"a misspelt command", []string{"chek"}, exitUsage, "", "Did you mean this?\n\tcheck"},
		{"a misspelt flag", []string{"check", "--ofline", "-c", "x.yaml"}, exitUsage, "", "Did you mean this?\n\t--offline"},
		{"a misspelt flag of run", []string{"run", "--onse"}, exitUsage, "", "--once"},
		{"a misspelt flag of tap", []string{"tap", "--sorce", "dns"}, exitUsage, "", "Did you mean this?\n\t--source"},
		{"a misspelt flag of healthcheck", []string{"healthcheck", "--adr", "127.0.0.1:1"}, exitUsage, "", "Did you mean this?\n\t--addr"},
		{"tap without --source", []string{"tap", "--addr", "127.0.0.1:1"}, exitUsage, "", "--source is required"},
		{"healthcheck of nothing listening", []string{"healthcheck", "--addr", "127.0.0.1:1", "--timeout", "2s"}, exitFailed, "not ready", ""},
		{"an argument where none is taken", []string{"run", "extra"}, exitUsage, "", `unknown command "extra"`},
		{"a flag without its value", []string{"check", "--timeout"}, exitUsage, "", "flag needs an argument"},
		{"a bad --from", []string{"verify", "--from", "yesterday", "-c", "x.yaml"}, exitUsage, "", "--from \"yesterday\""},
		{"help", []string{"--help"}, exitOK, "Available Commands:", ""},
		{"help of a command", []string{"help", "verify"}, exitOK, "--dry-run", ""},
		{"version", []string{"version"}, exitOK, "collector ", ""},
		{"the single-dash version of before", []string{"-version"}, exitOK, "collector ", ""},
		{"state's --interval", []string{"state", "--watch", "--interval", "0s", "-c", "x.yaml"}, exitUsage, "", "--interval must be positive"},
		{"--export-tenant without --to", []string{"state", "--export-tenant", "acme", "-c", "x.yaml"}, exitUsage, "", "--export-tenant NAME and --to FILE go together"},
		{"--force without --import", []string{"state", "--force", "-c", "x.yaml"}, exitUsage, "", "--force goes with --import"},
		{"two moves at once", []string{"state", "--import", "a.json", "--drop-tenant", "acme", "-c", "x.yaml"}, exitUsage, "", "one of --reset"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := cli(c.args...)
			if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errOut, c.stderr) {
				t.Fatalf("collector %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(c.args, " "), code, c.code, out, errOut)
			}
		})
	}
}

// The configuration comes from -c or --config, else $COLLECTOR_CONFIG
// (which the configuration's own COLLECTOR_* variables leave alone), else
// /etc/collector/collector.yaml.
func TestConfigPathDefaults(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("nope: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COLLECTOR_CONFIG", "")
	for _, args := range [][]string{{"check", "--offline", "-c", bad}, {"check", "--offline", "--config", bad}} {
		if code, _, errOut := cli(args...); code != exitUsage || !strings.Contains(errOut, "config: nope: unknown key") {
			t.Fatalf("%v: exit %d, %s", args, code, errOut)
		}
	}
	t.Setenv("COLLECTOR_CONFIG", bad)
	if code, _, errOut := cli("check", "--offline"); code != exitUsage || !strings.Contains(errOut, "config: nope: unknown key") ||
		strings.Contains(errOut, "config: config:") {
		t.Fatalf("$COLLECTOR_CONFIG: exit %d, %s", code, errOut)
	}
	t.Setenv("COLLECTOR_CONFIG", "")
	if _, err := os.Stat(defaultConfigPath); err == nil {
		t.Skipf("%s exists on this machine", defaultConfigPath)
	}
	if code, _, errOut := cli("check", "--offline"); code != exitUsage || !strings.Contains(errOut, "--config is required") ||
		!strings.Contains(errOut, defaultConfigPath) {
		t.Fatalf("no configuration anywhere: exit %d, %s", code, errOut)
	}
}

// collector completion writes a script for each shell that completes the
// commands and their flags.
func TestCompletionScripts(t *testing.T) {
	t.Setenv("COLLECTOR_CONFIG", "")
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := cli("completion", sh)
		if code != exitOK || !strings.Contains(out, "collector") || len(out) < 1000 {
			t.Fatalf("completion %s: exit %d, %d bytes, %s", sh, code, len(out), errOut)
		}
	}
	// What the scripts ask: the flags of check, with their help.
	code, out, _ := cli("__complete", "check", "--off")
	if code != exitOK || !strings.Contains(out, "--offline") {
		t.Fatalf("completing check --off: exit %d\n%s", code, out)
	}
}

// docs/cli is generated from the command definitions: a change of a flag
// or a help text without `go run ./cmd/collector docs --dir docs/cli`
// fails here.
func TestDocsCLIIsCurrent(t *testing.T) {
	t.Setenv("COLLECTOR_CONFIG", "")
	dir := t.TempDir()
	if code, _, errOut := cli("docs", "--dir", dir); code != exitOK {
		t.Fatalf("docs: exit %d: %s", code, errOut)
	}
	want, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil || len(want) < 8 {
		t.Fatalf("docs wrote %d pages (%v)", len(want), err)
	}
	committed, _ := filepath.Glob("../../docs/cli/*.md")
	if len(committed) != len(want) {
		t.Errorf("docs/cli holds %d pages, the commands make %d: run go run ./cmd/collector docs --dir docs/cli", len(committed), len(want))
	}
	for _, p := range want {
		got, err := os.ReadFile(filepath.Join("../../docs/cli", filepath.Base(p)))
		gen, _ := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, gen) {
			t.Errorf("docs/cli/%s is not what the commands say (%v): run go run ./cmd/collector docs --dir docs/cli", filepath.Base(p), err)
		}
	}
	man := t.TempDir()
	if code, _, errOut := cli("docs", "--man", "--dir", man); code != exitOK {
		t.Fatalf("docs --man: exit %d: %s", code, errOut)
	}
	if pages, _ := filepath.Glob(filepath.Join(man, "*.1")); len(pages) != len(want) {
		t.Errorf("docs --man wrote %d man pages, want %d", len(pages), len(want))
	}
}

// run --shard cuts the tenants as COLLECTOR_SHARD does. A shard that owns
// none of them has nothing to catch up: run --once exits 0 with a
// warning (the daemon idles: TestEmptyShardRunsIdle in internal/e2e),
// while check, which has nothing to check, is an error of key shard
// (exit 2).
func TestRunShardFlagSelectsTheShard(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	yaml := "tenants:\n  - name: alpha\n    api: {base_url: http://127.0.0.1:1, key_id: k, secret: \"${ALPHA_SECRET}\"}\n" +
		"checkpoint: {path: " + filepath.Join(dir, "cp.db") + "}\nsink: {type: file, file: {dir: " + filepath.Join(dir, "out") + "}}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ALPHA_SECRET", "s")
	other := 1 - shard.Owner("alpha", 2)
	code, _, errOut := cli("run", "--once", "--shard", fmt.Sprintf("%d/2", other), "-c", path)
	if code != exitOK || !strings.Contains(errOut, "owns none of the tenants") {
		t.Fatalf("run --once --shard %d/2: exit %d\n%s", other, code, errOut)
	}
	t.Setenv("COLLECTOR_SHARD", fmt.Sprintf("%d/2", other))
	code, _, errOut = cli("check", "-c", path)
	if code != exitUsage || !strings.Contains(errOut, "config: shard: shard "+fmt.Sprintf("%d/2", other)+": none of 1 tenants: this command has nothing to do") {
		t.Fatalf("check of shard %d/2: exit %d\n%s", other, code, errOut)
	}
}
