package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// A stream that fails before its first commit is visible in Prometheus:
// every per-stream series exists from the start (its rows, deliveries and
// last commit at 0, its poll errors by kind, blocked by reason) and its
// poll errors rise, so that CollectorStreamNotCommitting (poll errors and
// no commit) fires without absent(). Against the real binary's /metrics.
func TestSilentStream_FailingBeforeItsFirstCommitHasItsSeriesAtZeroAndErrorsRising(t *testing.T) {
	t.Parallel()
	t.Run("C5 key without access: forbidden, blocked", func(t *testing.T) {
		t.Parallel()
		sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
			c.Keys[0].AllowedAccounts = []string{"acme"}
		})
		cfg := harness.Config{Sim: sim, Start: time.Now().UTC().Add(-6 * time.Hour).Truncate(time.Minute),
			Sources: []string{"dns"}, Metrics: harness.FreeAddr(t),
			// Blocked streams are asked again this often: fast enough to
			// see their counter rise.
			Env: []string{"COLLECTOR_API__PERMANENT_ERROR_RETRY=300ms"}}
		silentStream(t, cfg, "acme-dev", source.PollErrorForbidden, api.ReasonForbidden, "acme",
			"streams", "dns/acme-dev: "+api.ReasonForbidden)
	})
	t.Run("C5 server errors on every data request", func(t *testing.T) {
		t.Parallel()
		sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) { c.ErrorRate = 1 })
		cfg := harness.Config{Sim: sim, Start: time.Now().UTC().Add(-6 * time.Hour).Truncate(time.Minute),
			Sources: []string{"dns"}, Accounts: []string{"acme"}, Metrics: harness.FreeAddr(t),
			Env: []string{"COLLECTOR_API__RETRY__INITIAL=50ms", "COLLECTOR_API__RETRY__MAX=100ms",
				"COLLECTOR_API__RETRY__MAX_ATTEMPTS=2",
				// /readyz names it once it failed this long (3 intervals of 1s).
				"COLLECTOR_METRICS__FAILING_AFTER=2s"}}
		silentStream(t, cfg, "acme", source.PollErrorTransient, "", "",
			"streams_failing", "dns/acme: no commit for")
	})
}

// silentStream runs cfg and checks that dns/account, which never commits,
// shows every series at 0 but its poll errors of kind, which rise, and
// collector_stream_blocked of reason ("" none) at 1. okAccount, when set,
// is a dns stream that commits meanwhile. /readyz must then answer 503 with
// its check named check holding want.
func silentStream(t *testing.T, cfg harness.Config, account, kind, reason, okAccount, check, want string) {
	t.Helper()
	c := harness.New(t, cfg)
	p := c.Start(t)
	defer p.Kill()
	lbl := fmt.Sprintf(`account=%q,source="dns"`, account)
	at := func(m map[string]float64, name, labels string) (float64, bool) {
		v, ok := m[name+"{"+labels+"}"]
		return v, ok
	}

	// The first scrape that answers: the series are there whatever the
	// poller did so far.
	var first map[string]float64
	deadline := time.Now().Add(time.Minute)
	for first == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no /metrics within a minute\n%s", p.Tail(20))
		}
		select {
		case <-p.Exited():
			t.Fatalf("the collector exited: %v\n%s", p.Err(), p.Tail(20))
		case <-time.After(100 * time.Millisecond):
		}
		first = scrapeAll(cfg.Metrics)
	}
	zero := []string{
		"collector_rows_fetched_total{" + lbl + "}",
		"collector_pages_fetched_total{" + lbl + "}",
		"collector_rows_delivered_total{" + lbl + "}",
		"collector_stream_last_commit_timestamp_seconds{" + lbl + "}",
		"collector_windows_split_total{" + lbl + "}",
		"collector_stream_failed{" + lbl + "}",
		"collector_backfill_windows_left{" + lbl + "}",
	}
	// Sink errors and API retries exist at 0 too, for every kind and
	// reason, before their first increment (issue 24).
	for _, k := range []string{"state", "canceled", "write", "invalid", "open", "sync", "truncate"} {
		zero = append(zero, fmt.Sprintf(`collector_sink_errors_total{kind=%q,sink="file"}`, k))
	}
	for _, r := range []string{"401", "429", "body", "malformed", "network", "status", "timeout"} {
		zero = append(zero, fmt.Sprintf(`collector_retries_total{reason=%q,source="dns"}`, r), fmt.Sprintf(`collector_retries_total{reason=%q,source="token"}`, r))
	}
	for _, k := range source.PollErrorKinds() {
		if k != kind {
			zero = append(zero, fmt.Sprintf(`collector_poll_errors_total{account=%q,kind=%q,source="dns"}`, account, k))
		}
	}
	for _, r := range api.PermanentReasons() {
		if r != reason {
			zero = append(zero, fmt.Sprintf(`collector_stream_blocked{account=%q,reason=%q,source="dns"}`, account, r))
		}
	}
	for _, s := range zero {
		if v, ok := first[s]; !ok || v != 0 {
			t.Errorf("first scrape: %s = %v (present: %v), want 0", s, v, ok)
		}
	}
	if _, ok := at(first, "collector_catchup_eta_seconds", lbl); !ok {
		t.Errorf("first scrape: no collector_catchup_eta_seconds{%s}", lbl)
	}

	// Its poll errors rise, it never commits; the other stream does.
	errSeries := fmt.Sprintf(`account=%q,kind=%q,source="dns"`, account, kind)
	var last map[string]float64
	deadline = time.Now().Add(90 * time.Second)
	for {
		last = scrapeAll(cfg.Metrics)
		n, _ := at(last, "collector_poll_errors_total", errSeries)
		okCommit := 1.0
		if okAccount != "" {
			okCommit, _ = at(last, "collector_stream_last_commit_timestamp_seconds", fmt.Sprintf(`account=%q,source="dns"`, okAccount))
		}
		if n >= 3 && okCommit > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s: collector_poll_errors_total{%s} = %v, commit of %q = %v, want >= 3 and > 0\n%s",
				errSeries, n, okAccount, okCommit, p.Tail(20))
		}
		select {
		case <-p.Exited():
			t.Fatalf("the collector exited: %v\n%s", p.Err(), p.Tail(20))
		case <-time.After(250 * time.Millisecond):
		}
	}
	for _, name := range []string{"collector_stream_last_commit_timestamp_seconds", "collector_rows_delivered_total",
		"collector_rows_fetched_total"} {
		if v, ok := at(last, name, lbl); !ok || v != 0 {
			t.Errorf("%s{%s} = %v (present: %v), want 0: the stream never delivered", name, lbl, v, ok)
		}
	}
	if reason != "" {
		s := fmt.Sprintf(`account=%q,reason=%q,source="dns"`, account, reason)
		if v, _ := at(last, "collector_stream_blocked", s); v != 1 {
			t.Errorf("collector_stream_blocked{%s} = %v, want 1", s, v)
		}
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, checks := harness.Ready(cfg.Metrics)
		if code == http.StatusServiceUnavailable && strings.Contains(checks[check], want) {
			t.Logf("/readyz %s: %s", check, checks[check])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never named the stream under %s (%q): %d %v\n%s", check, want, code, checks, p.Tail(20))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("stop: %v\n%s", err, p.Tail(20))
	}
}

// scrapeAll reads every sample of http://addr/metrics by its series text
// (name{labels}); nil when the collector does not answer.
func scrapeAll(addr string) map[string]float64 {
	body, code := harness.HTTPGet("http://" + addr + "/metrics")
	if code != 200 {
		return nil
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
