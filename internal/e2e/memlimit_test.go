package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/testinfra/harness"
)

// In a cgroup with a memory limit, `collector run` gives the Go runtime a
// soft limit of 90% of it (the runtime's own gauge on /metrics says so),
// and logs it; GOMEMLIMIT, when set, wins. The cgroup is a real one, made
// below the test's own: where the machine allows none (no root, a
// read-only hierarchy, cgroup v2 without the memory controller delegated),
// there is nothing to run the collector in.
func TestRunTakesNinetyPercentOfTheContainersMemoryLimit(t *testing.T) {
	t.Parallel()
	var limit int64 = 512 << 20
	dir := memoryCgroup(t, limit)
	sim := harness.StartSim(t, harness.QuickRates)
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().UTC().Add(-time.Hour).Truncate(time.Minute),
		Sources: []string{"dns"}, Metrics: harness.FreeAddr(t)})
	addr := c.Config().Metrics
	for _, tc := range []struct {
		env  []string
		want int64
		log  bool
	}{
		{nil, int64(float64(limit) * 0.9), true},
		{[]string{"GOMEMLIMIT=300MiB"}, 300 << 20, false},
	} {
		// The shell joins the cgroup, then becomes the collector.
		cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`,
			"sh", dir, harness.CollectorBin(t), "run", "--config", c.ConfigPath())
		cmd.Env = c.Environ(tc.env...)
		p := harness.StartCommand(t, cmd)
		var got float64
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if v, ok := harness.ScrapeGauges(addr, "go_gc_gomemlimit_bytes")["go_gc_gomemlimit_bytes"]; ok {
				got = v
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no go_gc_gomemlimit_bytes on /metrics\n%s", p.Tail(20))
			}
		}
		logged := strings.Contains(p.Logs(), "Go memory limit set from the container's memory limit")
		p.Kill()
		if int64(got) != tc.want || logged != tc.log {
			t.Errorf("env %v: Go memory limit %.0f bytes, logged %v; want %d, %v\n%s", tc.env, got, logged, tc.want, tc.log, p.Tail(20))
		}
	}
}

// memoryCgroup makes a cgroup with a memory limit of limit bytes below the
// test process's own and returns its directory, removed when the test
// ends; the test is skipped, saying why, where none can be made.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no /proc/self/cgroup: %v", err)
	}
	var parent, file string
	for _, line := range strings.Split(string(self), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" && parent == "" {
			parent, file = filepath.Join("/sys/fs/cgroup", f[2]), "memory.max"
		}
		for _, ctrl := range strings.Split(f[1], ",") {
			if ctrl == "memory" {
				parent, file = filepath.Join("/sys/fs/cgroup/memory", f[2]), "memory.limit_in_bytes"
			}
		}
	}
	if parent == "" {
		t.Skip("no memory cgroup in /proc/self/cgroup")
	}
	dir := filepath.Join(parent, fmt.Sprintf("collector-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	t.Cleanup(func() {
		// The collector has left (killed); the kernel needs a moment to
		// let an emptied cgroup go.
		for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, file), []byte(fmt.Sprint(limit)), 0o644); err != nil {
		t.Skipf("cannot set a memory limit in %s: %v", dir, err)
	}
	return dir
}
