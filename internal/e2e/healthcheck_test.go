package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/testinfra/harness"
)

// "collector healthcheck" (the image's HEALTHCHECK: distroless has no
// curl) asks the running collector's /readyz: exit 0 once it is ready,
// 1 when nothing listens; a wildcard metrics.listen is asked on loopback.
func TestHealthcheckExits0WhenTheDaemonIsReadyAnd1WhenItIsNot(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().UTC().Add(-time.Hour).Truncate(time.Minute), Metrics: harness.FreeAddr(t)})
	addr := c.Config().Metrics
	bin := harness.CollectorBin(t)
	hc := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append([]string{"healthcheck"}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	if code, out := hc("--addr", addr, "--timeout", "1s"); code != 1 || !strings.HasPrefix(out, "not ready") {
		t.Fatalf("no daemon: exit %d, %q; want 1 and one line", code, out)
	}
	p := c.Start(t)
	deadline := time.Now().Add(time.Minute)
	for {
		code, out := hc("--addr", addr)
		if code == 0 {
			if !strings.HasPrefix(out, "ready: http://"+addr+"/readyz") || strings.Count(out, "\n") != 1 {
				t.Errorf("ready: %q; want one line naming the URL", out)
			}
			break
		}
		if code != 1 || time.Now().After(deadline) {
			t.Fatalf("healthcheck exit %d (%q) against a running daemon\n%s", code, out, p.Tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The environment's metrics.listen, a wildcard host.
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(bin, "healthcheck")
	cmd.Env = append(os.Environ(), "COLLECTOR_METRICS__LISTEN=0.0.0.0:"+port)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("healthcheck with COLLECTOR_METRICS__LISTEN=0.0.0.0:%s: %v %s", port, err, out)
	}
}

// "collector version" of a binary built with go build in a git checkout
// names the commit the toolchain recorded, not "unknown".
func TestVersionOfAPlainGoBuildNamesItsCommit(t *testing.T) {
	t.Parallel()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing recorded to read", err)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "collector")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/collector")
	build.Dir = strings.TrimSpace(string(root))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The toolchain stamps a checkout whose .git is a directory: a git
	// worktree or submodule (.git a file) gets no vcs.* settings at all,
	// so there is nothing for version to read.
	if info, err := exec.Command("go", "version", "-m", bin).Output(); err != nil || !strings.Contains(string(info), "vcs.revision=") {
		t.Skipf("go build recorded no vcs.revision here (a git worktree?): %v", err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "commit "+strings.TrimSpace(string(head))) || strings.Contains(string(out), "built unknown") {
		t.Errorf("version: %q; want commit %s and its time", out, strings.TrimSpace(string(head)))
	}
}
