package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/checkpoint/checkpointtest"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// collectorBin is the collector binary built for this test run.
var collectorBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "collector-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	collectorBin = filepath.Join(dir, "collector")
	build := exec.Command("go", "build", "-o", collectorBin, "github.com/svcexport/collector/cmd/collector")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build collector:", err)
		os.Exit(1)
	}
	code := m.Run()
	// The ClickHouse server chtest may have started for this binary stops
	// before the leak check (its goroutines and HTTP connections).
	chtest.StopShared()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	coreSources = []string{"changed_files", "connections", "dns", "user_logins", "agent_info", "audit_logs", "cloud_activities"}
	edgeSources = []string{"edge_audit_events", "edge_alerts"}
	allSources  = append(append([]string{}, coreSources...), edgeSources...)
	accounts    = []string{"acme", "acme-dev"}
)

// startSim starts a simulator with modest default rates (so that three days
// of nine sources stay quick under the race detector) and settled alerts.
func startSim(t *testing.T, mut func(*apisim.Config)) *apisim.Server {
	t.Helper()
	cfg := apisim.DefaultConfig()
	cfg.Rates = map[string]float64{
		"changed_files": 400, "connections": 600, "dns": 500, "user_logins": 150, "agent_info": 60,
		"audit_logs": 40, "cloud_activities": 300, "edge_audit_events": 120, "edge_alerts": 30,
	}
	// Alerts take their updates within a minute, before the collector (lag
	// 2m) reads them, so one version of each alert is final (C6).
	cfg.AlertUpdateWindow = time.Minute
	if mut != nil {
		mut(&cfg)
	}
	return simtest.Start(t, func(c *apisim.Config) { *c = cfg })
}

// setup describes one collector configuration written for a test.
type setup struct {
	dir   string // holds config, checkpoint, out
	sim   *apisim.Server
	start time.Time
	// extra is YAML appended to the generated configuration; keys given
	// there must not repeat generated ones (use env for overrides).
	extra string
	// env are extra environment variables (KEY=VALUE).
	env []string
	// metrics is the metrics listen address, "" for none.
	metrics string
}

func (s *setup) configPath() string     { return filepath.Join(s.dir, "collector.yaml") }
func (s *setup) checkpointPath() string { return filepath.Join(s.dir, "data", "checkpoint.db") }
func (s *setup) outDir() string         { return filepath.Join(s.dir, "out") }

// newSetup writes a configuration that reads every source of both accounts
// from sim starting at start, into the file sink. The secret and the edge
// token come from the environment, as in production.
func newSetup(t *testing.T, sim *apisim.Server, start time.Time, extra string) *setup {
	t.Helper()
	s := &setup{dir: t.TempDir(), sim: sim, start: start, extra: extra}
	s.write(t)
	return s
}

func (s *setup) write(t *testing.T) {
	t.Helper()
	cfg := fmt.Sprintf(`api:
  base_url: %s
  key_id: sim-key
edge:
  base_url: %s
accounts: [acme, acme-dev]
checkpoint:
  path: %s
log:
  format: json
  level: info
  progress: 0s
metrics:
  listen: %q
%s`, s.sim.URL(), s.sim.EdgeURL(), s.checkpointPath(), s.metrics, s.extra)
	if !strings.Contains(s.extra, "sources:") {
		cfg += fmt.Sprintf("sources:\n  default:\n    start: %s\n    lag: 2m\n    interval: 1s\n", s.start.Format(time.RFC3339))
	}
	if !strings.Contains(s.extra, "sink:") {
		cfg += fmt.Sprintf("sink:\n  type: file\n  file:\n    dir: %s\n", s.outDir())
	}
	if err := os.WriteFile(s.configPath(), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (s *setup) environ() []string {
	env := append(os.Environ(), "COLLECTOR_API__SECRET=sim-secret", "COLLECTOR_EDGE__TOKEN=sim-edge-token")
	return append(env, s.env...)
}

// command returns the collector command for args (config appended).
func (s *setup) command(ctx context.Context, args ...string) *exec.Cmd {
	args = append(args, "--config", s.configPath())
	cmd := exec.CommandContext(ctx, collectorBin, args...)
	cmd.Env = s.environ()
	return cmd
}

// runOnce runs "collector run --once" to completion and returns its logs.
func (s *setup) runOnce(t *testing.T, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := s.command(ctx, "run", "--once")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Run(); err != nil {
		t.Fatalf("collector run --once: %v\n%s", err, tail(logs.String(), 40))
	}
	return logs.String()
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

// output is what a sink delivered: per stream, every id with how often it
// came, and the record time of each id.
type output struct {
	ids   map[streamKey]map[string]int
	times map[string]time.Time
	total int
}

func newOutput() *output {
	return &output{ids: map[streamKey]map[string]int{}, times: map[string]time.Time{}}
}

// add takes one C7 envelope as JSON.
func (o *output) add(t *testing.T, line []byte) {
	t.Helper()
	var e struct {
		ID      string    `json:"id"`
		Source  string    `json:"source"`
		Account string    `json:"account"`
		Time    time.Time `json:"time"`
		Record  json.RawMessage
	}
	if err := json.Unmarshal(line, &e); err != nil {
		t.Fatalf("envelope %q: %v", line, err)
	}
	if id, err := record.ID(e.Source, e.Record); err != nil || id != e.ID {
		t.Fatalf("envelope id %s is not the C7 id of its record (%s, %v)", e.ID, id, err)
	}
	k := streamKey{e.Source, e.Account}
	if o.ids[k] == nil {
		o.ids[k] = map[string]int{}
	}
	o.ids[k][e.ID]++
	o.times[e.ID] = e.Time
	o.total++
}

// duplicates counts deliveries beyond the first of every id.
func (o *output) duplicates() int {
	n := 0
	for _, m := range o.ids {
		for _, c := range m {
			n += c - 1
		}
	}
	return n
}

// readFileSink reads every NDJSON file (plain, gzip, in progress) under dir.
func readFileSink(t *testing.T, dir string) *output {
	t.Helper()
	out := newOutput()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".ndjson") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var r io.Reader = f
		if strings.Contains(d.Name(), ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			r = zr
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) > 0 {
				out.add(t, sc.Bytes())
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// watermarks reads every stream's committed watermark from the checkpoint
// file (the collector must be stopped).
func watermarks(t *testing.T, path string) map[streamKey]checkpoint.State {
	t.Helper()
	out := map[streamKey]checkpoint.State{}
	for k, st := range checkpointtest.ReadFile(t, path) {
		out[streamKey{k.Source, k.Account}] = st
	}
	return out
}

// compareWithTruth checks, for every stream and every UTC day of
// [from, watermark), that the deduplicated ids the sink holds for records of
// that day have the count and XOR the simulator's /_truth gives (C8). It
// returns the number of distinct records compared.
func compareWithTruth(t *testing.T, sim *apisim.Server, out *output, streams []streamKey, from time.Time, wms map[streamKey]checkpoint.State) int64 {
	t.Helper()
	var total int64
	for _, k := range streams {
		st, ok := wms[k]
		if !ok || st.Watermark.IsZero() {
			t.Errorf("%s/%s: no watermark committed", k.source, k.account)
			continue
		}
		end := st.Watermark
		if !end.After(from) {
			t.Errorf("%s/%s: watermark %v did not pass the start %v", k.source, k.account, end, from)
			continue
		}
		// Bucket the delivered ids of [from, end) by day.
		days := map[time.Time]*record.Digest{}
		for id := range out.ids[k] {
			tm := out.times[id]
			if tm.Before(from) || !tm.Before(end) {
				continue
			}
			d := tm.UTC().Truncate(24 * time.Hour)
			if days[d] == nil {
				days[d] = &record.Digest{}
			}
			if err := days[d].Add(id); err != nil {
				t.Fatal(err)
			}
		}
		for d := from.UTC().Truncate(24 * time.Hour); d.Before(end); d = d.Add(24 * time.Hour) {
			lo, hi := maxTime(d, from), minTime(d.Add(24*time.Hour), end)
			wantN, wantX := sim.Truth(k.source, k.account, lo, hi)
			got := days[d]
			if got == nil {
				got = &record.Digest{}
			}
			if got.Count != wantN || got.Hex() != wantX {
				t.Errorf("%s/%s day %s [%s, %s): delivered %d distinct records (xor %.12s), truth %d (xor %.12s)",
					k.source, k.account, d.Format("2006-01-02"), lo.Format(time.RFC3339), hi.Format(time.RFC3339), got.Count, got.Hex(), wantN, wantX)
			}
			total += got.Count
		}
	}
	return total
}

func allStreams() []streamKey {
	var out []streamKey
	for _, s := range allSources {
		for _, a := range accounts {
			out = append(out, streamKey{s, a})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].source+out[i].account < out[j].source+out[j].account })
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process is a collector started in the background.
type process struct {
	cmd  *exec.Cmd
	logs *simtest.SyncBuffer
	done chan error
}

// startCollector starts "collector run" (plus args) in the background.
func (s *setup) startCollector(t *testing.T, args ...string) *process {
	t.Helper()
	cmd := s.command(context.Background(), append([]string{"run"}, args...)...)
	p := &process{cmd: cmd, logs: &simtest.SyncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// wait waits for the process to exit by itself within d.
func (p *process) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("collector did not exit within %v\n%s", d, tail(p.logs.String(), 40))
		return nil
	}
}

// benchSimConfig is the simulator of the sink benchmarks: a dense, steady
// backlog of three sources and a budget that never limits.
func benchSimConfig(cfg *apisim.Config) {
	cfg.Rates = map[string]float64{"connections": 60_000, "dns": 50_000, "changed_files": 40_000}
	cfg.WaveAmplitude, cfg.BurstProbability = 0, 0
	cfg.RateLimit = 100_000
}
