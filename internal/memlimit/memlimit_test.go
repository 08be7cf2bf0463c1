package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func cgroup(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, v := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Limit reads cgroup v2's memory.max and v1's limit_in_bytes, and says
// "none" for v2's "max", v1's page-aligned maximum and a missing file.
func TestLimitReadsCgroupV2AndV1(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"v2", map[string]string{"memory.max": "1073741824\n"}, 1 << 30, true},
		{"v2 unlimited", map[string]string{"memory.max": "max\n"}, 0, false},
		{"v1", map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}, 512 << 20, true},
		{"v1 unlimited", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"none", nil, 0, false},
	} {
		got, ok, err := Limit(cgroup(t, c.files), []byte("0::/\n"))
		if err != nil || got != c.want || ok != c.ok {
			t.Errorf("%s: %d %v %v, want %d %v", c.name, got, ok, err, c.want, c.ok)
		}
	}
	// A systemd unit's own cgroup (MemoryMax=) comes before the root's.
	unit := cgroup(t, map[string]string{"memory.max": "max", "system.slice/collector.service/memory.max": "268435456"})
	if got, ok, err := Limit(unit, []byte("0::/system.slice/collector.service\n")); err != nil || !ok || got != 256<<20 {
		t.Errorf("systemd unit: %d %v %v", got, ok, err)
	}
	v1 := cgroup(t, map[string]string{"memory/docker/abc/memory.limit_in_bytes": "134217728"})
	if got, ok, err := Limit(v1, []byte("12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n")); err != nil || !ok || got != 128<<20 {
		t.Errorf("v1 nested: %d %v %v", got, ok, err)
	}
	if _, _, err := Limit(cgroup(t, map[string]string{"memory.max": "lots"}), nil); err == nil || !strings.Contains(err.Error(), `"lots"`) {
		t.Errorf("a bad file: %v", err)
	}
}

// Set gives the runtime 90 % of the container's limit, and leaves an
// operator's GOMEMLIMIT alone. Not parallel: it sets the process's limit.
func TestSetTakesShareOfTheLimitUnlessGOMEMLIMITIsSet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	root := cgroup(t, map[string]string{"memory.max": "1073741824"})
	got, err := Set(root, nil, func(string) string { return "" })
	lim := int64(1 << 30)
	if want := int64(float64(lim) * Share); err != nil || got != want || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("Set: %d (%v), runtime %d; want %d", got, err, debug.SetMemoryLimit(-1), want)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	got, err = Set(root, nil, func(k string) string {
		if k == "GOMEMLIMIT" {
			return "200MiB"
		}
		return ""
	})
	if err != nil || got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("with GOMEMLIMIT: %d (%v), runtime %d", got, err, debug.SetMemoryLimit(-1))
	}
	if got, err := Set(cgroup(t, nil), nil, func(string) string { return "" }); err != nil || got != 0 {
		t.Fatalf("without a cgroup: %d (%v)", got, err)
	}
}
