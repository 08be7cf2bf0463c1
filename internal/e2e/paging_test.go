package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// The paging scenarios: the simulator's knobs set differently from the
// collector's configuration, as a real service will be (CONTRACT C3, C5,
// C6). Each run is compared per (stream, day) with /_truth.

// cutChainRows sums the rows the chains delivered that did not finish their
// window, for reason ("expired", "page_cap", "truncated"), from the
// collector's JSON logs: what comes again when the window is asked again.
func cutChainRows(t *testing.T, logs, reason string) (chains int, rows int64) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg    string `json:"msg"`
			Reason string `json:"reason"`
			Rows   int64  `json:"rows"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Reason == reason && strings.Contains(l.Msg, "asking the window again in parts") {
			chains++
			rows += l.Rows
		}
	}
	return chains, rows
}

// requests sums the requests the simulator counted for functionality fn.
func requests(sim *apisim.Server, fn string) int64 {
	var n int64
	for _, c := range sim.Stats().Counters {
		if c.Functionality == fn {
			n += c.Requests
		}
	}
	return n
}

// (1) C3: the server sends 1,000-row pages, the collector assumes 5,000
// (api.page_rows) and walks at most 10 pages a chain: a window of about
// 36,000 rows is under the configured threshold (5,000 x 10) but its chain
// would stop at 10,000. The collector learns the page size from the first
// full page, splits at 1,000 x 10, and delivers everything once, exit 0.
func TestPaging_C3_ServerPagesSmallerThanConfiguredUnderThePageCapAreComplete(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.Rates = map[string]float64{"dns": 1500, "connections": 1200}
		c.BurstProbability = 0
		c.PageSize = 1000
	})
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	sources := []string{"dns", "connections"}
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Accounts: []string{"acme"}, Sources: sources, Interval: harness.Omit,
		Env: []string{"COLLECTOR_API__MAX_PAGES=10"}})
	c.RunOnce(t, 2*time.Minute)

	out := c.ReadOutput(t)
	n := c.Compare(t, out, c.Streams())
	truth, _ := c.TruthRows(t)
	var served int64
	for _, s := range sources {
		served += sim.Stats().Get("sim-admin", s).RowsServed
	}
	t.Logf("%d of %d records, %d duplicates; %d requests, %d rows served", n, truth, out.Duplicates(), requests(sim, "dns")+requests(sim, "connections"), served)
	if truth < 40_000 {
		t.Fatalf("only %d records: the windows never passed the page cap, the test proves nothing", truth)
	}
	if d := out.Duplicates(); d != 0 {
		t.Errorf("%d duplicates: a split decided on the first page delivers nothing twice", d)
	}
}

// (2) C3: next-page URLs live 2.5 s while api.next_page_ttl keeps its
// default of 24 h, and every answer takes 300 ms: a day's chain outlives
// its URLs. --once learns the next-page life from the first expiry, splits
// the windows so that each walk fits well within it, and ends complete
// with exit 0; duplicates are no more than the expired chains delivered.
func TestPaging_C3_NextPageLifeOfSecondsWithTheDefault24hCompletesOnce(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.Rates = map[string]float64{"connections": 1500}
		c.BurstProbability = 0
		c.PageSize = 500
		c.NextPageTTL = 2500 * time.Millisecond
		c.SlowRate = 1
		c.SlowDelay = 300 * time.Millisecond
	})
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Accounts: []string{"acme"}, Sources: []string{"connections"},
		Interval: harness.Omit, PageRows: 500})
	run := c.RunOnce(t, 3*time.Minute)

	out := c.ReadOutput(t)
	n := c.Compare(t, out, c.Streams())
	st := sim.Stats().Get("sim-admin", "connections")
	if st.NextPage404 == 0 {
		t.Fatalf("no next-page URL expired: the test proves nothing (%d records)", n)
	}
	chains, rows := cutChainRows(t, run.Logs, "expired")
	if d := int64(out.Duplicates()); d > rows {
		t.Errorf("%d duplicates, more than the %d rows the %d expired chains delivered", d, rows, chains)
	}
	if st.NextPage404 > 3 {
		t.Errorf("%d next pages expired: the next-page life was not learnt", st.NextPage404)
	}
	t.Logf("%d records, %d duplicates (%d rows of %d expired chains); %d requests, %d next-page 404s, %d rows served",
		n, out.Duplicates(), rows, chains, st.Requests, st.NextPage404, st.RowsServed)
}

// (3) C6: three sub-accounts and the edge API, which has no account
// selection: every edge record is fetched and delivered once, under its own
// account, and the edge bucket is spent once per window, not once per
// sub-account.
// envelopeTime is how C7 writes window_start and window_end.
const envelopeTime = "2006-01-02T15:04:05.000Z07:00"

func TestPaging_C6_EdgeWithThreeSubAccountsIsFetchedOncePerToken(t *testing.T) {
	t.Parallel()
	accounts := []string{"acme", "acme-dev", "acme-ops"}
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) { c.Accounts = accounts })
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	edge := []string{"edge_audit_events", "edge_alerts"}
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Accounts: accounts, Sources: append([]string{"dns"}, edge...),
		Interval: harness.Omit, Env: []string{"COLLECTOR_EDGE__ALERT_UPDATE_LOOKBACK=0s"}})
	c.RunOnce(t, 2*time.Minute)

	out := c.ReadOutput(t)
	n := c.Compare(t, out, c.Streams())
	lines, distinct, windows := 0, map[string]bool{}, map[string]bool{}
	harness.EachEnvelope(t, c.OutDir(), func(e *harness.Envelope, _ []byte) {
		if harness.IsEdge(e.Source) {
			lines++
			distinct[e.ID] = true
			windows[e.Source+" "+e.WindowStart+" "+e.WindowEnd] = true
		}
	})
	if lines == 0 || lines != len(distinct) {
		t.Errorf("%d edge records delivered for %d distinct ids: each must come once", lines, len(distinct))
	}
	perAccount := map[string]int{}
	for k, ids := range out.IDs {
		if harness.IsEdge(k.Source) {
			perAccount[k.Account] += len(ids)
		}
	}
	if len(perAccount) != len(accounts) {
		t.Errorf("edge records under accounts %v, want each of %v", perAccount, accounts)
	}
	// The simulator says what each edge request asked: a window asked twice
	// (say once per sub-account) fails, while a window that held no record
	// and a full answer that was split (C6) do not.
	asked, full := map[string]int{}, 0
	for _, q := range sim.EdgeQueries() {
		k := q.Source + " " + q.Start.Format(envelopeTime) + " " + q.End.Format(envelopeTime)
		asked[k]++
		if q.Full {
			full++
		} else {
			delete(windows, k)
		}
	}
	for k, n := range asked {
		if n > 1 {
			t.Errorf("edge window %s asked %d times: the edge bucket is spent more than once per window", k, n)
		}
	}
	if len(windows) > 0 {
		t.Errorf("edge windows in the envelopes that no whole edge answer covers: %v", windows)
	}
	edgeReq := sim.Stats().Get("edge", "edge").Requests
	wms := c.Watermarks(t)
	for _, s := range edge {
		if _, ok := wms[record.Stream{Source: s, Account: harness.EdgeAccount}]; !ok {
			t.Errorf("no checkpoint stream %s/%s", s, harness.EdgeAccount)
		}
		for _, a := range accounts {
			if _, ok := wms[record.Stream{Source: s, Account: a}]; ok {
				t.Errorf("an edge stream per sub-account: %s/%s", s, a)
			}
		}
	}
	t.Logf("%d records; edge: %d delivered, %d distinct, %d requests for %d windows (%d full answers split), per account %v",
		n, lines, len(distinct), edgeReq, len(asked), full, perAccount)
}

// (4) C2, C5: the key may not read acme-dev nor organization-level audit
// logs (403). --once exits non-zero naming those streams while the others
// complete; the daemon keeps going, names them in /readyz and flags them
// in collector_stream_blocked, without asking them again in a fast loop.
func TestPaging_C5_KeyWithoutAccessBlocksOnlyItsStreams(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.Keys[0].AllowedAccounts = []string{"acme"}
		c.Keys[0].NoOrgAccess = true
		c.PageSize = 500 // smaller than api.page_rows: /state says what was learnt
	})
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	sources := []string{"dns", "audit_logs"}
	cfg := harness.Config{Sim: sim, Start: start, Sources: sources, Interval: harness.Omit, Extra: "org_audit_logs: true\n"}
	blocked := []string{"dns/acme-dev", "audit_logs/acme-dev", "audit_logs/org"}

	t.Run("check", func(t *testing.T) {
		c := harness.New(t, cfg)
		code, out := c.CLI(t, nil, "check")
		if code != 1 {
			t.Fatalf("check with forbidden streams exited %d, want 1\n%s", code, harness.Tail(out, 30))
		}
		for _, s := range blocked {
			if !regexp.MustCompile(`(?m)^FAIL  access of ` + regexp.QuoteMeta(s) + `: .*403`).MatchString(out) {
				t.Errorf("check does not report %s refused with its 403\n%s", s, harness.Tail(out, 30))
			}
		}
		for _, s := range []string{"dns/acme", "audit_logs/acme"} {
			if !strings.Contains(out, "ok    access of "+s+"\n") {
				t.Errorf("check does not report %s readable\n%s", s, harness.Tail(out, 30))
			}
		}
		if strings.Contains(out, harness.Secret) {
			t.Error("check printed the secret")
		}
	})

	t.Run("once", func(t *testing.T) {
		c := harness.New(t, cfg)
		p := c.Start(t, "--once")
		err := p.Wait(t, 2*time.Minute)
		var ee *exec.ExitError
		if err == nil || !errors.As(err, &ee) || ee.ExitCode() == 0 || ee.ExitCode() == 2 {
			t.Fatalf("--once with forbidden streams exited %v, want a runtime failure\n%s", err, p.Tail(20))
		}
		logs := p.Logs()
		for _, s := range blocked {
			if !strings.Contains(logs, "poller "+s+": ") {
				t.Errorf("the run's error does not name %s\n%s", s, harness.Tail(logs, 20))
			}
		}
		n := c.Compare(t, c.ReadOutput(t), harness.Streams(sources, []string{"acme"}))
		if n == 0 {
			t.Error("the streams the key may read delivered nothing")
		}
		if st := sim.Stats().Get("sim-admin", "dns"); st.Requests > 40 {
			t.Errorf("%d dns requests: forbidden streams were repeated", st.Requests)
		}
		t.Logf("exit %d; %d records of the readable streams", ee.ExitCode(), n)
	})

	t.Run("daemon", func(t *testing.T) {
		d := cfg
		d.Metrics = harness.FreeAddr(t)
		c := harness.New(t, d)
		p := c.Start(t)
		defer p.Kill()
		var checks map[string]string
		deadline := time.Now().Add(time.Minute)
		for {
			code, ch := harness.Ready(d.Metrics)
			checks = ch
			if code == 503 && containsAll(ch["streams"], blocked) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz never named the blocked streams: %d %v\n%s", code, ch, p.Tail(20))
			}
			select {
			case <-p.Exited():
				t.Fatalf("the daemon exited: %v\n%s", p.Err(), p.Tail(20))
			case <-time.After(200 * time.Millisecond):
			}
		}
		if !strings.Contains(checks["streams"], "forbidden") || strings.Contains(checks["streams"], harness.Secret) {
			t.Errorf("/readyz streams: %q", checks["streams"])
		}
		metrics, _ := harness.HTTPGet("http://" + d.Metrics + "/metrics")
		for _, s := range blocked {
			src, acct, _ := strings.Cut(s, "/")
			series := fmt.Sprintf(`collector_stream_blocked{account=%q,reason="forbidden",source=%q} 1`, acct, src)
			if !strings.Contains(metrics, series) {
				t.Errorf("/metrics lacks %s", series)
			}
		}
		// The readable streams go on: dns/acme reaches now - lag.
		harness.WaitState(t, p, d.Metrics, time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
			return st[record.Stream{Source: "dns", Account: "acme"}].CaughtUp, "dns/acme never caught up while other streams were blocked"
		})
		// /state says which streams are blocked and why, and what the
		// readable ones learnt of the server's page size (C3).
		st := harness.LiveState(d.Metrics)
		for _, s := range blocked {
			src, acct, _ := strings.Cut(s, "/")
			if b := st[record.Stream{Source: src, Account: acct}].Blocked; b == nil || b.Reason != "forbidden" || !strings.Contains(b.Error, "403") {
				t.Errorf("/state of %s: blocked %+v, want forbidden with its 403", s, b)
			}
		}
		if ls := st[record.Stream{Source: "dns", Account: "acme"}]; ls.Blocked != nil || ls.Learnt == nil || ls.Learnt.PageRows != 500 {
			t.Errorf("/state of dns/acme: blocked %+v, learnt %+v; want not blocked, page_rows 500", ls.Blocked, ls.Learnt)
		}
		before := sim.Stats().Get("sim-admin", "audit_logs").Requests
		time.Sleep(2 * time.Second)
		if after := sim.Stats().Get("sim-admin", "audit_logs").Requests; after-before > 3 {
			t.Errorf("%d audit_logs requests in 2 s while two of its three streams are blocked: a fast loop", after-before)
		}
		if err := p.Stop(30 * time.Second); err != nil {
			t.Fatalf("stop: %v\n%s", err, p.Tail(20))
		}
	})
}

// (5) C3: the service caps totalRows at 20,000 while its chains stop at its
// result cap of 50,000 rows (api.result_cap set to it) and a window holds
// about 120,000: a first page's count cannot tell, the chain that ends at
// the cap can. The collector asks such windows again in parts: complete.
func TestPaging_C3_CappedTotalRowsWithMoreRecordsInAWindowAreComplete(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.Rates = map[string]float64{"dns": 10_000}
		c.BurstProbability, c.WaveAmplitude = 0, 0 // the count must not hang on the hour of the day
		c.ResultCap = 50_000
		c.TotalRowsCap = 20_000
	})
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Accounts: []string{"acme"}, Sources: []string{"dns"}, Interval: harness.Omit,
		Env: []string{"COLLECTOR_API__RESULT_CAP=50000"}})
	run := c.RunOnce(t, 3*time.Minute)

	out := c.ReadOutput(t)
	n := c.Compare(t, out, c.Streams())
	truth, _ := c.TruthRows(t)
	chains, rows := cutChainRows(t, run.Logs, "truncated")
	st := sim.Stats().Get("sim-admin", "dns")
	t.Logf("%d of %d records, %d duplicates (%d rows of %d chains cut at the cap); %d requests, %d rows served",
		n, truth, out.Duplicates(), rows, chains, st.Requests, st.RowsServed)
	if truth < 100_000 {
		t.Fatalf("only %d records: no window passed the cap, the test proves nothing", truth)
	}
	if chains == 0 {
		t.Fatal("no chain ended at the cap: the test proves nothing")
	}
	if d := int64(out.Duplicates()); d > rows {
		t.Errorf("%d duplicates, more than the %d rows of the %d chains cut at the cap", d, rows, chains)
	}
}

// (6) C3: the service's chains stop at 50,000 rows, its own cap, while its
// totalRows are true and api.result_cap keeps its default of 500,000; its
// AuditLogs answers come without paging, cut to one page. A chain that
// ends before its count and a no-paging answer as large as a full page are
// cut answers: their windows are asked again in parts, never committed
// short. Run once straight through and once with SIGKILLs (a chain resumed
// after a restart is judged by its first page's count too): 0 missing per
// (stream, day), exit 0.
func TestPaging_C3_AServerChainCapBelowTheConfiguredResultCapLosesNothing(t *testing.T) {
	t.Parallel()
	for _, kills := range []int{0, 3} {
		t.Run(fmt.Sprintf("%d kills", kills), func(t *testing.T) {
			t.Parallel()
			sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
				c.Rates = map[string]float64{"dns": 12_000, "audit_logs": 3_000}
				c.BurstProbability, c.WaveAmplitude = 0, 0 // the count must not hang on the hour of the day
				c.PageSize = 2_000
				c.ResultCap = 50_000
				c.AuditUnpaged = true
			})
			// With kills, 36 hours: each run must still be backfilling when
			// it is killed (up to a second in), and a run gets through 12
			// hours of both sources in about half a second.
			span := 12 * time.Hour
			if kills > 0 {
				span = 36 * time.Hour
			}
			start := time.Now().UTC().Add(-span).Truncate(time.Minute)
			// DEBUG: a split is logged there (a normal walk, no warning).
			c := harness.New(t, harness.Config{Sim: sim, Start: start, Accounts: []string{"acme"}, Sources: []string{"dns", "audit_logs"},
				Interval: harness.Omit, PageRows: 2_000, Metrics: harness.FreeAddr(t), LogLevel: "debug"})
			if kills > 0 {
				c.KillRuns(t, kills, rand.New(rand.NewPCG(20, 1)), 300*time.Millisecond, 700*time.Millisecond)
			}
			run := c.RunOnce(t, 3*time.Minute)
			out := c.ReadOutput(t)
			n := c.Compare(t, out, c.Streams())
			truth, _ := c.TruthRows(t)
			if truth < 100_000 {
				t.Fatalf("only %d records: no window passed the server's cap, the test proves nothing", truth)
			}
			if kills == 0 {
				if !strings.Contains(run.Logs, `"chain_cap_seen":50000`) {
					t.Errorf("the chain cap of 50,000 was not learnt:\n%s", harness.Tail(run.Logs, 30))
				}
				if !strings.Contains(run.Logs, "window too large to walk whole, split") {
					t.Errorf("no audit_logs window was split:\n%s", harness.Tail(run.Logs, 30))
				}
			}
			st := sim.Stats()
			t.Logf("%d of %d records, %d duplicates; dns %d requests, audit_logs %d requests", n, truth, out.Duplicates(),
				st.Get("sim-admin", "dns").Requests, st.Get("sim-admin", "audit_logs").Requests)
		})
	}
}

// (7) C3: what a stream learnt of the server survives a restart (issue 29).
// The service's chains stop at 50,000 rows; a first run backfills the
// first half of 24 hours (lag 12h) and learns that cap by cutting chains
// at it; a second run, a restart on the same checkpoint, backfills the
// rest (lag 2m). It starts with the cap it learnt, so none of its chains
// is cut at the cap and asked again: before the checkpoint kept the
// learnt limits, the second run cut chains at the cap again to relearn
// it. 0 missing per (stream, day) over both runs.
func TestPaging_C3_ARestartKeepsTheChainCapItLearnt(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.Rates = map[string]float64{"dns": 12_000}
		c.BurstProbability, c.WaveAmplitude = 0, 0
		c.PageSize = 2_000
		c.ResultCap = 50_000
	})
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	cfg := harness.Config{Sim: sim, Dir: t.TempDir(), Start: start, Accounts: []string{"acme"}, Sources: []string{"dns"},
		Interval: harness.Omit, PageRows: 2_000, Lag: 12 * time.Hour}
	first := harness.New(t, cfg).RunOnce(t, 3*time.Minute)
	learnt, _ := cutChainRows(t, first.Logs, "short")
	if learnt == 0 {
		t.Fatalf("the first run cut no chain at the server's cap: the test proves nothing\n%s", harness.Tail(first.Logs, 30))
	}
	before := requests(sim, "dns")
	cfg.Lag = 0 // 2m
	c := harness.New(t, cfg)
	second := c.RunOnce(t, 3*time.Minute)
	asked := requests(sim, "dns") - before
	chains, rows := cutChainRows(t, second.Logs, "short")
	t.Logf("first run: %d chains cut at the cap; restart: %d requests, %d chains cut at the cap again (%d rows, %d pages of 2,000 asked again)",
		learnt, asked, chains, rows, (rows+1_999)/2_000)
	if chains > 0 {
		t.Errorf("after a restart %d chains were cut at the cap again (%d rows asked again): the learnt cap was lost", chains, rows)
	}
	out := c.ReadOutput(t)
	c.Compare(t, out, c.Streams())
}

// C3, C5, C6: settings the API cannot honour are configuration errors
// (exit 2, one line naming the key), not silent no-ops at run time.
func TestPaging_SettingsTheAPICannotHonourAreConfigurationErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: s\nmetrics:\n  listen: \"\"\nsink:\n  file:\n    dir: " +
		filepath.Join(dir, "out") + "\ncheckpoint:\n  path: " + filepath.Join(dir, "cp.db") + "\n"
	values := make([]string, 100_000)
	for i := range values {
		values[i] = fmt.Sprintf("host-%06d", i)
	}
	big, _ := json.Marshal(values)
	cases := []struct{ name, yaml, want string }{
		{"edge.accounts (C6: no account selection)", base + "edge:\n  base_url: http://127.0.0.1:1/edge\n  token: t\n  accounts: [acme]\n", "edge.accounts: removed"},
		{"filters on cloud_activities (a GET)", base + "sources:\n  cloud_activities:\n    filters:\n      - {expression: eq, field: eventType, value: NewUser}\n",
			"sources.cloud_activities.filters: cloud_activities cannot take filters"},
		{"returns on an edge source", base + "edge:\n  base_url: http://127.0.0.1:1/edge\n  token: t\nsources:\n  edge_alerts:\n    returns: [create_time]\n",
			"sources.edge_alerts.returns: edge_alerts cannot take returns"},
		{"a search body over 1 MB (C5)", base + "sources:\n  dns:\n    filters:\n      - {expression: in, field: fqdn, values: " + string(big) + "}\n",
			"sources.dns.filters: the search body of dns is"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := harness.RunCLI(t, nil, "check", "--config", p)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 2 naming %q:\n%s", code, tc.want, harness.Tail(out, 5))
			}
		})
	}
}

func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
