package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/checkpoint/checkpointtest"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// collectorBin is the collector binary built by TestMain when benchmarks
// run; empty otherwise.
var collectorBin string

// long enables the benchmarks that take minutes (10 million rows):
//
//	go test -run '^$' -bench Memory -benchtime 1x ./internal/bench/ -args -long
var long = flag.Bool("long", false, "also run the long benchmarks (BenchmarkMemory/rows=10M)")

// TestMain builds the collector binary into a temporary directory when
// benchmarks were asked for (-test.bench), so that a plain `go test ./...`
// pays nothing for this package.
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(func() int {
		if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
			dir, err := os.MkdirTemp("", "collector-bench-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			collectorBin = filepath.Join(dir, "collector")
			build := exec.Command("go", "build", "-o", collectorBin, "github.com/svcexport/collector/cmd/collector")
			build.Stdout, build.Stderr = os.Stderr, os.Stderr
			if err := build.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "build collector:", err)
				return 1
			}
		}
		return m.Run()
	}())
}

var (
	coreSources = []string{"changed_files", "connections", "dns", "user_logins", "agent_info", "audit_logs", "cloud_activities"}
	edgeSources = []string{"edge_audit_events", "edge_alerts"}
	allSources  = append(append([]string{}, coreSources...), edgeSources...)
	twoAccounts = []string{"acme", "acme-dev"}
)

// startSim starts a simulator on loopback; mut adjusts its configuration
// (DefaultConfig: production rates and limits, no faults).
func startSim(tb testing.TB, mut func(*apisim.Config)) *apisim.Server {
	tb.Helper()
	return simtest.Start(tb, mut)
}

// runSpec describes one `collector run --once` against a simulator.
type runSpec struct {
	sim      *apisim.Server
	dir      string   // holds collector.yaml, data/, out/
	accounts []string // sub-accounts
	sources  []string // enabled sources; edge ones need the edge API
	start    time.Time
	// fsync of the file sink; the sink is always the file sink into dir/out.
	fsync bool
	// rate is api.rate and edge.rate: "limit: N, period: D" pairs.
	rateLimit  int
	ratePeriod time.Duration
	// pageRows is api.page_rows; 0 keeps the default (5000).
	pageRows int
	// metrics, when set, turns on metrics.listen on a free port and
	// samples the collector's Go memory gauges every second (see scraped).
	metrics     bool
	metricsAddr string // set by runOnce
}

func (r runSpec) configPath() string     { return filepath.Join(r.dir, "collector.yaml") }
func (r runSpec) checkpointPath() string { return filepath.Join(r.dir, "data", "checkpoint.db") }
func (r runSpec) outDir() string         { return filepath.Join(r.dir, "out") }

// write writes the configuration file. Credentials go in the environment,
// as in production (see env).
func (r runSpec) write(tb testing.TB) {
	tb.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "api:\n  base_url: %s\n  key_id: sim-key\n", r.sim.URL())
	if r.pageRows > 0 {
		fmt.Fprintf(&b, "  page_rows: %d\n", r.pageRows)
	}
	rate := ""
	if r.rateLimit > 0 {
		rate = fmt.Sprintf("  rate:\n    limit: %d\n    period: %s\n", r.rateLimit, r.ratePeriod)
	}
	b.WriteString(rate)
	edge := false
	for _, s := range r.sources {
		edge = edge || strings.HasPrefix(s, "edge_")
	}
	if edge {
		fmt.Fprintf(&b, "edge:\n  base_url: %s\n%s", r.sim.EdgeURL(), rate)
	}
	fmt.Fprintf(&b, "accounts: [%s]\n", strings.Join(r.accounts, ", "))
	fmt.Fprintf(&b, "sources:\n  default:\n    enabled: false\n    start: %s\n    lag: 2m\n    interval: 1s\n", r.start.UTC().Format(time.RFC3339))
	for _, s := range r.sources {
		fmt.Fprintf(&b, "  %s:\n    enabled: true\n", s)
	}
	fmt.Fprintf(&b, "checkpoint:\n  path: %s\n", r.checkpointPath())
	fmt.Fprintf(&b, "sink:\n  type: file\n  file:\n    dir: %s\n    fsync: %v\n", r.outDir(), r.fsync)
	fmt.Fprintf(&b, "metrics:\n  listen: %q\nlog:\n  format: json\n  level: info\n  progress: 0s\n", r.metricsAddr)
	if err := os.MkdirAll(r.dir, 0o750); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(r.configPath(), []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// result is what one collector process did and cost.
type result struct {
	wall      time.Duration
	user, sys time.Duration
	// maxRSS is the collector's peak resident set, bytes: the last VmHWM
	// read from /proc while it ran (every rssEvery; a peak in its last
	// rssEvery would be missed). ruMaxRSS is wait4's ru_maxrss, which on
	// Linux is at least the benchmark process's own peak RSS when the
	// collector was started (the exec'ing child inherits the parent's
	// high-water mark: the kernel folds the old mm's into signal->maxrss
	// at exec), so it is only meaningful when parentHWM is small.
	maxRSS, ruMaxRSS, parentHWM int64
	// rss holds VmRSS samples (bytes) taken every rssEvery while it ran.
	rss  []int64
	rows int64 // rows_delivered of the collector's final "done" line
	logs string
	// scraped holds, per gauge of scrapedGauges, one sample a second
	// (runSpec.metrics only).
	scraped map[string][]float64
}

// scrapedGauges are the series runOnce samples from /metrics.
var scrapedGauges = []string{
	"go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes",
	"go_memstats_next_gc_bytes", "go_goroutines", "collector_pipeline_buffered_records",
}

func (r result) cpu() time.Duration { return r.user + r.sys }

const rssEvery = 200 * time.Millisecond

// runOnce runs `collector run --once` for spec to completion. The
// collector's CPU time and peak RSS come from the kernel's accounting of
// that one process (wait4 rusage), so the simulator serving it from the
// benchmark's process is not counted.
func runOnce(tb testing.TB, spec runSpec, timeout time.Duration) result {
	tb.Helper()
	if collectorBin == "" {
		tb.Fatal("collector binary not built (TestMain builds it when -bench is given)")
	}
	if spec.metrics {
		spec.metricsAddr = freeAddr(tb)
	}
	spec.write(tb)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, collectorBin, "run", "--once", "--config", spec.configPath())
	cmd.Env = append(os.Environ(), "COLLECTOR_API__SECRET=sim-secret", "COLLECTOR_EDGE__TOKEN=sim-edge-token")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	_, parentHWM, _ := procMem(os.Getpid())
	began := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	var samples []int64
	var peak int64
	scraped := map[string][]float64{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if spec.metricsAddr != "" {
		wg.Go(func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					for k, v := range scrape(spec.metricsAddr) {
						scraped[k] = append(scraped[k], v)
					}
				}
			}
		})
	}
	wg.Go(func() {
		t := time.NewTicker(rssEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if rss, hwm, ok := procMem(cmd.Process.Pid); ok {
					samples = append(samples, rss)
					peak = max(peak, hwm)
				}
			}
		}
	})
	err := cmd.Wait()
	wall := time.Since(began)
	close(stop)
	wg.Wait()
	if err != nil {
		tb.Fatalf("collector run --once: %v\n%s", err, tail(logs.String(), 40))
	}
	st := cmd.ProcessState
	res := result{wall: wall, user: st.UserTime(), sys: st.SystemTime(), rss: samples, logs: logs.String(), scraped: scraped,
		maxRSS: peak, parentHWM: parentHWM}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		res.ruMaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	if peak == 0 {
		tb.Fatal("no VmHWM sample of the collector: it ended within the first sample interval")
	}
	res.rows = doneRows(tb, res.logs)
	return res
}

// scrape reads the gauges of scrapedGauges from http://addr/metrics; a
// failed scrape (the collector not listening yet, or gone) gives none.
func scrape(addr string) map[string]float64 {
	c := http.Client{Timeout: 500 * time.Millisecond}
	res, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(scrapedGauges, name) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// procMem reads the resident set (VmRSS) and its high-water mark (VmHWM)
// of pid from /proc (Linux), in bytes.
func procMem(pid int) (rss, hwm int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, false
	}
	field := func(line, name string) (int64, bool) {
		v, found := strings.CutPrefix(line, name)
		if !found {
			return 0, false
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		return n * 1024, err == nil
	}
	var gotRSS, gotHWM bool
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := field(line, "VmRSS:"); found {
			rss, gotRSS = v, true
		}
		if v, found := field(line, "VmHWM:"); found {
			hwm, gotHWM = v, true
		}
	}
	return rss, hwm, gotRSS && gotHWM
}

// doneRows returns rows_delivered of the collector's final log line.
func doneRows(tb testing.TB, logs string) int64 {
	tb.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg  string `json:"msg"`
			Rows *int64 `json:"rows_delivered"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "done" && l.Rows != nil {
			return *l.Rows
		}
	}
	tb.Fatalf("no final \"done\" line with rows_delivered in the collector's logs:\n%s", tail(logs, 20))
	return 0
}

// countLogs counts log lines whose msg is msg.
func countLogs(logs, msg string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		var l struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == msg {
			n++
		}
	}
	return n
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// streamKey names a (source, account) stream.
type streamKey struct{ source, account string }

// watermarks reads every stream's committed state from a stopped
// collector's checkpoint file.
func watermarks(tb testing.TB, path string) map[streamKey]checkpoint.State {
	tb.Helper()
	out := map[streamKey]checkpoint.State{}
	for k, st := range checkpointtest.ReadFile(tb, path) {
		out[streamKey{k.Source, k.Account}] = st
	}
	return out
}

// truthRows is the number of records the simulator holds for every stream
// of spec between spec.start and the stream's committed watermark (C8).
func truthRows(tb testing.TB, spec runSpec) (int64, map[streamKey]int64) {
	tb.Helper()
	wms := watermarks(tb, spec.checkpointPath())
	per := map[streamKey]int64{}
	var total int64
	for _, s := range spec.sources {
		for _, a := range spec.accounts {
			k := streamKey{s, a}
			st, ok := wms[k]
			if !ok || !st.Watermark.After(spec.start) {
				tb.Fatalf("%s/%s: no watermark past the start", s, a)
			}
			n, _ := spec.sim.Truth(s, a, spec.start, st.Watermark)
			per[k] = n
			total += n
		}
	}
	return total, per
}

// loadNote returns the load averages of /proc/loadavg, for b.Log.
func loadNote() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load: unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load: unknown"
	}
	return "load average " + strings.Join(f[:3], " ")
}

// loadAvg1 returns the 1-minute load average, -1 when unknown.
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// selfCPU returns the CPU time (user + system) of this process so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
