package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// Module is the import path of the collector's module.
const Module = "github.com/svcexport/collector"

// builds holds what this test binary built: one directory for all of it,
// made on the first build and removed by Main (test helper state: one set of
// binaries per test process by design).
var builds struct {
	sync.Mutex
	main bool              // Main is running the tests
	dir  string            // made on first use
	byID map[string]*build // by recipe
}

type build struct {
	once sync.Once
	dir  string // of this build alone
	path string
	err  error
}

// Option changes what Main does.
type Option func(*mainOptions)

type mainOptions struct{ leaks bool }

// CheckLeaks makes Main fail a run whose tests passed but left goroutines
// behind (go.uber.org/goleak), once the shared ClickHouse server stopped.
func CheckLeaks() Option { return func(o *mainOptions) { o.leaks = true } }

// Main runs the tests of m and returns the exit code for os.Exit. The builds
// (CollectorBin, GoBuild, ReleaseCollector) are made when a test first asks
// for them, so a run that needs none (a plain `go test` of a benchmark
// package) pays nothing; Main removes them afterwards and stops the
// ClickHouse server chtest may have started for this binary. Use:
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m, harness.CheckLeaks())) }
func Main(m *testing.M, opts ...Option) int {
	var o mainOptions
	for _, f := range opts {
		f(&o)
	}
	builds.Lock()
	builds.main = true
	builds.Unlock()

	code := m.Run()

	// The server chtest may have started stops before the leak check (its
	// goroutines and HTTP connections).
	chtest.StopShared()
	builds.Lock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
		builds.dir, builds.byID = "", nil
	}
	builds.Unlock()
	if code == 0 && o.leaks {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// CollectorBin returns the collector binary (cmd/collector, `go build`) of this
// test binary, building it on the first call. TestMain must run the tests
// with Main.
func CollectorBin(tb testing.TB) string {
	tb.Helper()
	return GoBuild(tb, Module+"/cmd/collector")
}

// GoBuild returns the binary of the main package pkg (an import path of
// this module), built with `go build` on the first call for pkg.
func GoBuild(tb testing.TB, pkg string) string {
	tb.Helper()
	return buildOnce(tb, "go build "+pkg, func(dir string) (*exec.Cmd, string) {
		out := filepath.Join(dir, path.Base(pkg))
		return exec.Command("go", "build", "-o", out, pkg), out
	})
}

// Stamp is the version information scripts/release-build.sh writes into a
// release binary (its VERSION, COMMIT and DATE).
type Stamp struct{ Version, Commit, Date string }

// ReleaseCollector returns the collector built the way releases are
// (scripts/release-build.sh: static, trimmed, stamped with s), building it
// on the first call for s.
func ReleaseCollector(tb testing.TB, s Stamp) string {
	tb.Helper()
	root := RepoRoot(tb)
	return buildOnce(tb, fmt.Sprintf("release %+v", s), func(dir string) (*exec.Cmd, string) {
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "release-build.sh"), dir, "collector")
		cmd.Env = append(os.Environ(), "VERSION="+s.Version, "COMMIT="+s.Commit, "DATE="+s.Date)
		return cmd, filepath.Join(dir, "collector")
	})
}

// buildOnce runs the recipe id once per test binary, in a directory of its
// own, and returns the path of what it built.
func buildOnce(tb testing.TB, id string, recipe func(dir string) (*exec.Cmd, string)) string {
	tb.Helper()
	root := RepoRoot(tb)
	builds.Lock()
	if !builds.main {
		builds.Unlock()
		tb.Fatal("harness: TestMain must run the tests with harness.Main, which removes the builds")
	}
	if builds.dir == "" {
		d, err := os.MkdirTemp("", "collector-harness-")
		if err != nil {
			builds.Unlock()
			tb.Fatal(err)
		}
		builds.dir, builds.byID = d, map[string]*build{}
	}
	b := builds.byID[id]
	if b == nil {
		b = &build{dir: filepath.Join(builds.dir, fmt.Sprint(len(builds.byID)))}
		builds.byID[id] = b
	}
	builds.Unlock()

	b.once.Do(func() {
		if err := os.MkdirAll(b.dir, 0o750); err != nil {
			b.err = err
			return
		}
		cmd, out := recipe(b.dir)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("%s: %v\n%s", id, err, msg)
			return
		}
		b.path = out
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// RepoRoot returns the repository's top directory: the first directory
// holding go.mod above the working directory (a test runs in its package's
// directory).
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}
