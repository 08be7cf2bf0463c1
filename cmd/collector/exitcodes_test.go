package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// check, tap and verify agree (issue 33 item 7): a bad command line is
// exit 2 with "collector CMD: ..." and the hint at "collector CMD --help";
// a server that cannot be reached is exit 1 with a last line on standard
// error "collector CMD: ..." that says so (check: its FAIL line says
// which, its last line how many failed); a gap (verify) and a FAIL (check)
// are exit 1 with such a line too. The table of docs/commands.md.
func TestCheckTapAndVerifyAgreeInWordingAndExitCodes(t *testing.T) {
	t.Setenv("COLLECTOR_CONFIG", "")
	dir := t.TempDir()
	closed := closedAddr(t)

	// Bad command lines, each command alike.
	for _, c := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"check", []string{"check", "--ofline", "-c", "x.yaml"}, "unknown flag: --ofline"},
		{"tap", []string{"tap", "--sorce", "dns"}, "unknown flag: --sorce"},
		{"tap", []string{"tap", "--addr", closed}, "--source is required"},
		{"tap", []string{"tap", "--source", "dns", "--limit", "0", "--addr", closed}, "--limit 0"},
		{"verify", []string{"verify", "--from", "yesterday", "-c", "x.yaml"}, `--from "yesterday"`},
		{"verify", []string{"verify", "--yse", "-c", "x.yaml"}, "unknown flag: --yse"},
	} {
		code, out, errOut := cli(c.args...)
		first := strings.SplitN(errOut, "\n", 2)[0]
		if code != exitUsage || out != "" || !strings.HasPrefix(first, "collector "+c.cmd+": ") || !strings.Contains(first, c.want) ||
			!strings.Contains(errOut, "Run 'collector "+c.cmd+" --help' for usage.") {
			t.Errorf("collector %s: exit %d, want 2, with \"collector %s: ...%s\" and the hint at its --help\nstdout: %s\nstderr: %s",
				strings.Join(c.args, " "), code, c.cmd, c.want, out, errOut)
		}
	}

	// Nothing answers: the API (check, verify), the collector (tap).
	cfg := filepath.Join(dir, "unreachable.yaml")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cfg, fmt.Sprintf(`api:
  base_url: http://%s
  key_id: k
  secret: s
  retry: {max_attempts: 1}
accounts: [acme]
checkpoint: {path: %s}
sink: {type: file, file: {dir: %s}}
log: {level: error}
`, closed, filepath.Join(dir, "checkpoint.db"), filepath.Join(dir, "out")))

	code, out, errOut := cli("check", "-c", cfg, "--timeout", "5s")
	if code != exitFailed || !strings.Contains(out, "FAIL  core API at http://"+closed) || lastLine(errOut) != "collector check: 1 check failed: see the FAIL lines of the report" {
		t.Errorf("check of an API that cannot be reached: exit %d, want 1, a FAIL line and the verdict\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = cli("tap", "--source", "dns", "--addr", closed)
	if code != exitFailed || out != "" || !strings.HasPrefix(lastLine(errOut), "collector tap: the collector cannot be reached at http://"+closed) {
		t.Errorf("tap of a collector that cannot be reached: exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// verify needs something collected: a short run against the
	// simulator, then the same checkpoint and files with the API gone.
	sim := filepath.Join(dir, "sim.yaml")
	write(sim, fmt.Sprintf(`simulator: {enabled: true, settings: {accounts: [acme, acme-dev]}}
accounts: [acme]
sources: {default: {start: 2h, lag: 1m}}
checkpoint: {path: %s}
sink: {type: file, file: {dir: %s}}
log: {level: error}
`, filepath.Join(dir, "checkpoint.db"), filepath.Join(dir, "out")))
	if code, _, errOut := cli("run", "--once", "-c", sim); code != exitOK {
		t.Fatalf("run --once: exit %d\n%s", code, errOut)
	}
	code, out, errOut = cli("verify", "-c", cfg, "--yes", "--source", "dns")
	if code != exitFailed || !strings.HasPrefix(lastLine(errOut), "collector verify: the API cannot be reached: ") {
		t.Errorf("verify of an API that cannot be reached: exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// A problem found: verify's gap (a day's file emptied), check's FAIL
	// (the sink's directory is a file).
	code, out, errOut = cli("verify", "-c", sim, "--yes", "--source", "dns")
	if code != exitOK {
		t.Fatalf("verify of a complete output: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	files, err := filepath.Glob(filepath.Join(dir, "out", "dns", "acme", "*.ndjson"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dns files: %v", err)
	}
	for _, f := range files {
		write(f, "")
	}
	code, out, errOut = cli("verify", "-c", sim, "--yes", "--source", "dns")
	if code != exitFailed || !strings.Contains(out, "gap: dns/acme") || !strings.HasPrefix(lastLine(errOut), "collector verify: ") ||
		!strings.Contains(lastLine(errOut), "with a gap") {
		t.Errorf("verify with a gap: exit %d, want 1 with the verdict\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	blocked := filepath.Join(dir, "sim-blocked.yaml")
	asFile := filepath.Join(dir, "a-file")
	write(asFile, "")
	b, err := os.ReadFile(sim)
	if err != nil {
		t.Fatal(err)
	}
	write(blocked, strings.Replace(string(b), filepath.Join(dir, "out"), filepath.Join(asFile, "out"), 1))
	code, out, errOut = cli("check", "-c", blocked)
	if code == exitOK || !strings.Contains(out, "FAIL  sink file") || !strings.HasPrefix(lastLine(errOut), "collector check: ") {
		t.Errorf("check of a sink that cannot write: exit %d, want 1 or 2 with a FAIL line and the verdict\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
