package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// `collector tap` (issue 24, item 10) prints what the running daemon
// delivers of one source and account, as the C7 envelopes the sinks
// store, and spends no API request. Against the real binaries:
//
//   - during a backfill, a tap found through --config (as `state` finds
//     the daemon) gets its --limit of envelopes of dns/acme, each a valid
//     C7 envelope the file sink holds, and the sink's records are the
//     simulator's truth;
//   - every request the simulator counted (GET /_stats) is one the
//     daemon's pollers counted themselves (collector_requests_total), so
//     the tap spent none; and with the daemon caught up and idle, a tap
//     leaves /_stats exactly as it was;
//   - an interrupt ends a tap cleanly (exit 0), a daemon that stops ends
//     its taps (exit 1, "stopping") without being held up by them, and an
//     unknown source or account (at once, naming what is collected), no
//     daemon, no --source are clear errors;
//   - the tap is on (metrics.tap.enabled) with a token file (issue 29
//     item 1): a tap without the token or with another exits 1, refused.
func TestTap_PrintsWhatTheDaemonDeliversAndSpendsNoAPIRequest(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.Rates["dns"] = 36000
		c.PageSize = 500
		c.RateLimit = 1_000_000 // the collector's own api.rate paces the backfill
	})
	addr := harness.FreeAddr(t)
	start := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	// A backfill of about 300 pages at 40 requests a second (several
	// seconds to tap), then idle: the next poll is an hour away and no
	// recheck revisits anything.
	// The tap on, with a token: the daemon and every `collector tap` get
	// the file from the environment (tap --config reads it from the
	// configuration, tap --addr from $COLLECTOR_METRICS__TAP__TOKEN_FILE).
	tokenFile := filepath.Join(t.TempDir(), "tap-token")
	if err := os.WriteFile(tokenFile, []byte("e2e-tap-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrongToken := filepath.Join(t.TempDir(), "wrong-token")
	if err := os.WriteFile(wrongToken, []byte("not-the-tap-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: []string{"dns"}, Lag: 5 * time.Second,
		Interval: time.Hour, Recheck: "[]", PageRows: 500, Rate: harness.Rate{Limit: 40, Period: time.Second},
		Metrics: addr, NoFsync: true,
		Env: []string{"COLLECTOR_METRICS__TAP__ENABLED=true", "COLLECTOR_METRICS__TAP__TOKEN_FILE=" + tokenFile}})
	simRequests := func() int64 {
		body, code := harness.HTTPGet(sim.URL() + "/_stats")
		var st apisim.Stats
		if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("GET /_stats: %d %s", code, body)
		}
		var n int64
		for _, cnt := range st.Counters {
			n += cnt.Requests
		}
		return n
	}
	s0 := simRequests()

	p := c.Start(t)
	defer p.Kill()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, code := harness.HTTPGet("http://" + addr + "/healthz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's telemetry server did not answer within 30s\n%s", p.Tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// 1. A tap during the backfill, found through the daemon's config.
	tapCmd := func(ctx context.Context, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		cmd := exec.CommandContext(ctx, harness.CollectorBin(t), append([]string{"tap"}, args...)...)
		cmd.Env = c.Environ()
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		return cmd, &out, &errOut
	}
	tap := func(args ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd, out, errOut := tapCmd(ctx, args...)
		return exitStatus(t, cmd.Run()), out.String(), errOut.String()
	}
	began, rows := time.Now(), sumMetric(t, addr, "collector_rows_delivered_total")
	code, out, errOut := tap("--config", c.ConfigPath(), "--source", "dns", "--account", "acme", "--limit", "50")
	if code != 0 {
		t.Fatalf("tap: exit %d: %s\n%s", code, errOut, p.Tail(20))
	}
	t.Logf("tap: 50 envelopes of dns/acme in %v of backfill; the daemon delivered %d records before, %d after", time.Since(began).Round(time.Millisecond),
		rows, sumMetric(t, addr, "collector_rows_delivered_total"))
	tapped := checkEnvelopes(t, out, record.Stream{Source: "dns", Account: "acme"})
	if len(tapped) != 50 {
		t.Fatalf("%d envelopes, want --limit 50; stderr %q", len(tapped), errOut)
	}

	// 2. Caught up and idle: the simulator's count stops moving.
	last := int64(-1)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		st := harness.LiveState(addr)
		caught := len(st) == 2
		for _, s := range st {
			caught = caught && time.Since(s.Watermark) < time.Minute
		}
		now := simRequests()
		if caught && now == last {
			break
		}
		last = now
		if time.Now().After(deadline) {
			t.Fatalf("not caught up and idle within 2 minutes\n%s", p.Tail(20))
		}
		time.Sleep(time.Second)
	}
	// Every request the simulator saw is one the pollers made and counted:
	// none is the tap's.
	s1 := simRequests()
	// collector_requests_total: every API request the collector made.
	polled := sumMetric(t, addr, "collector_requests_total")
	t.Logf("API requests: %d at the simulator, %d counted by the daemon's pollers", s1-s0, polled)
	if s1-s0 != polled || polled == 0 {
		t.Errorf("the simulator answered %d requests, the daemon's pollers made %d: the tap spent %d", s1-s0, polled, s1-s0-polled)
	}
	// An idle daemon: a tap leaves /_stats exactly as it was.
	code, out, errOut = tap("--addr", addr, "--source", "dns", "--timeout", "1500ms")
	if code != 0 || out != "" || !strings.Contains(errOut, "timeout") {
		t.Errorf("tap of an idle daemon: exit %d, stdout %q, stderr %q; want 0, nothing, a note of the timeout", code, out, errOut)
	}
	if s2 := simRequests(); s2 != s1 {
		t.Errorf("a tap of an idle daemon: the simulator's requests went from %d to %d", s1, s2)
	}

	// 3. Errors, said clearly.
	if code, _, errOut := tap("--addr", addr, "--source", "dsn"); code != 1 || !strings.Contains(errOut, `source "dsn" is not collected`) ||
		!strings.Contains(errOut, `did you mean "dns"?`) {
		t.Errorf("unknown source: exit %d, %q", code, errOut)
	}
	// No --timeout: before issue 29 this waited forever.
	if code, _, errOut := tap("--addr", addr, "--source", "dns", "--account", "nope"); code != 1 ||
		!strings.Contains(errOut, `account "nope" of source "dns" is not collected`) || !strings.Contains(errOut, "its accounts: "+strings.Join(harness.Accounts(), ", ")) {
		t.Errorf("unknown account: exit %d, %q", code, errOut)
	}
	if code, _, errOut := tap("--addr", addr, "--source", "dns", "--token-file", wrongToken, "--timeout", "1s"); code != 1 || !strings.Contains(errOut, "wrong bearer token") {
		t.Errorf("a wrong token: exit %d, %q; want 1, refused", code, errOut)
	}
	noToken := exec.Command(harness.CollectorBin(t), "tap", "--addr", addr, "--source", "dns", "--timeout", "1s")
	for _, kv := range c.Environ() {
		if !strings.HasPrefix(kv, "COLLECTOR_METRICS__TAP__TOKEN_FILE=") {
			noToken.Env = append(noToken.Env, kv)
		}
	}
	if out, err := noToken.CombinedOutput(); exitStatus(t, err) != 1 || !strings.Contains(string(out), "asks for a bearer token") {
		t.Errorf("no token: exit %d, %q; want 1, refused, saying a token is asked for", exitStatus(t, err), out)
	}
	if code, _, errOut := tap("--source", "dns", "--url", "http://"+harness.FreeAddr(t)); code != 1 || !strings.Contains(errOut, "cannot be reached") {
		t.Errorf("no daemon: exit %d, %q", code, errOut)
	}
	if code, _, errOut := tap("--addr", addr); code != 2 || !strings.Contains(errOut, "--source is required") {
		t.Errorf("no --source: exit %d, %q; want 2", code, errOut)
	}

	// 4. An interrupt ends a waiting tap cleanly.
	waitTaps := func(n float64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); harness.ScrapeGauges(addr, "collector_tap_clients")["collector_tap_clients"] != n; {
			if time.Now().After(deadline) {
				t.Fatalf("collector_tap_clients never %v", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, _, errBuf := tapCmd(ctx, "--addr", addr, "--source", "dns")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitTaps(1)
	_ = cmd.Process.Signal(syscall.SIGINT)
	if code := exitStatus(t, cmd.Wait()); code != 0 {
		t.Errorf("interrupted tap: exit %d, %s", code, errBuf)
	}
	waitTaps(0)

	// 5. The daemon stops with a tap open: the tap ends (exit 1, the
	// collector is stopping) and does not hold the daemon up (its telemetry
	// server waits up to 5 s for open requests).
	cmd, _, errBuf = tapCmd(ctx, "--addr", addr, "--source", "dns")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitTaps(1)
	stopped := time.Now()
	if err := p.Stop(time.Minute); err != nil {
		t.Fatalf("daemon: %v\n%s", err, p.Tail(20))
	}
	took := time.Since(stopped)
	code = exitStatus(t, cmd.Wait())
	t.Logf("the daemon stopped in %v with a tap open", took.Round(time.Millisecond))
	if code != 1 || !strings.Contains(errBuf.String(), "stopping") {
		t.Errorf("a tap open when the daemon stops: exit %d, %q; want 1, stopping", code, errBuf)
	}
	if took > 4*time.Second {
		t.Errorf("the daemon took %v to stop with a tap open", took)
	}

	// 6. The tapped records are ones the sink stored, and the sink's are
	// the simulator's truth.
	output := c.ReadOutput(t)
	stored := output.IDs[record.Stream{Source: "dns", Account: "acme"}]
	for id := range tapped {
		if stored[id] == 0 {
			t.Errorf("tapped %s, which the sink does not hold", id)
		}
	}
	c.Compare(t, output, c.Streams())
}

// checkEnvelopes decodes out, NDJSON C7 envelopes of k, and returns their
// ids; a line that is no such envelope fails t.
func checkEnvelopes(t *testing.T, out string, k record.Stream) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e harness.Envelope
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if e.Stream() != k {
			t.Errorf("envelope of %s, want %s", e.Stream(), k)
		}
		if id, err := record.ID(e.Source, e.Record); err != nil || id != e.ID {
			t.Errorf("envelope id %s is not the C7 id of its record (%s, %v)", e.ID, id, err)
		}
		ws, err1 := time.Parse(time.RFC3339Nano, e.WindowStart)
		we, err2 := time.Parse(time.RFC3339Nano, e.WindowEnd)
		if err1 != nil || err2 != nil || e.Time.Before(ws) || !e.Time.Before(we) || e.FetchedAt.IsZero() {
			t.Errorf("envelope %s: time %s outside its window [%s, %s), or no fetched_at", e.ID, e.Time, e.WindowStart, e.WindowEnd)
		}
		if ids[e.ID] {
			t.Errorf("envelope %s tapped twice", e.ID)
		}
		ids[e.ID] = true
	}
	return ids
}

// sumMetric sums the series of the metric name (with labels) of the
// collector on addr, from its /metrics.
func sumMetric(t *testing.T, addr, name string) int64 {
	t.Helper()
	body, code := harness.HTTPGet("http://" + addr + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	var n int64
	for line := range strings.Lines(body) {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:]), 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		n += int64(v)
	}
	return n
}

// exitStatus is the exit code of a command that ended with err.
func exitStatus(t *testing.T, err error) int {
	t.Helper()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}
