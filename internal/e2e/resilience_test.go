package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Next-page URLs that expire before a chain is walked (C3): the collector
// restarts the window, splits it when it keeps expiring, and is complete.
func TestNextPageExpiryShorterThanAChainWalkStaysComplete(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.Rates = map[string]float64{"connections": 3000}
		c.PageSize = 500
		c.NextPageTTL = 2 * time.Second
		c.SlowRate = 1
		c.SlowDelay = 150 * time.Millisecond
	})
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Accounts: []string{"acme"}, Sources: []string{"connections"},
		Interval: harness.Omit, PageRows: 500, Env: []string{"COLLECTOR_API__NEXT_PAGE_TTL=2s"}})
	c.RunOnce(t, 5*time.Minute)

	k := record.Stream{Source: "connections", Account: "acme"}
	out := c.ReadOutput(t)
	n := c.Compare(t, out, []record.Stream{k})
	st := sim.Stats().Get("sim-admin", "connections")
	if st.NextPage404 == 0 {
		t.Fatalf("no next-page URL expired: the test did not exercise expiry (%d records)", n)
	}
	// A chain restarted after its next-page URL expired delivers only
	// what its first walk did not (issue 22).
	if d := out.Duplicates(); d != 0 {
		t.Errorf("%d records delivered twice after %d expired next pages", d, st.NextPage404)
	}
	t.Logf("%d records, %d expired next pages, %d duplicates", n, st.NextPage404, out.Duplicates())
}

// With a short rate period (60 tokens per 5 s) a two-account backfill sees
// zero 429 (C4): the budget paces the requests.
func TestBudgetedBackfillSeesNo429(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.RateLimit = 60
		c.RatePeriod = 5 * time.Second
		c.PageSize = 500
		c.Rates["connections"] = 2500
		c.Rates["dns"] = 2000
	})
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, PageRows: 500, Rate: harness.Rate{Limit: 60, Period: 5 * time.Second}})
	began := time.Now()
	c.RunOnce(t, 5*time.Minute)
	c.Compare(t, c.ReadOutput(t), harness.AllStreams())
	var requests int64
	for _, cnt := range sim.Stats().Counters {
		requests += cnt.Requests
		if cnt.RateLimited != 0 {
			t.Errorf("%s/%s: %d answers were 429", cnt.User, cnt.Functionality, cnt.RateLimited)
		}
	}
	conn := sim.Stats().Get("sim-admin", "connections")
	if conn.Requests <= 60 {
		t.Fatalf("connections needed only %d requests: the bucket was never the limit", conn.Requests)
	}
	t.Logf("%d requests in %v; connections: %d requests", requests, time.Since(began).Round(time.Millisecond), conn.Requests)
}

// A noisy neighbour of the same user spends half of every bucket: 429s are
// few and nothing is lost (C4: the headers are the truth).
func TestNoisyNeighbourCostsFew429AndNoRecords(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.RateLimit = 60
		c.RatePeriod = 5 * time.Second
		c.PageSize = 500
		c.NoisyFraction = 0.5
		c.Rates["connections"] = 2500
		c.Rates["dns"] = 2000
	})
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, PageRows: 500, Rate: harness.Rate{Limit: 60, Period: 5 * time.Second}})
	c.RunOnce(t, 5*time.Minute)
	c.Compare(t, c.ReadOutput(t), harness.AllStreams())
	var requests, limited int64
	for _, cnt := range sim.Stats().Counters {
		requests += cnt.Requests
		limited += cnt.RateLimited
	}
	if conn := sim.Stats().Get("sim-admin", "connections"); conn.Requests <= 60 {
		t.Fatalf("connections needed only %d requests: the bucket was never the limit", conn.Requests)
	}
	if limited*20 > requests {
		t.Errorf("%d of %d requests were 429: more than 5%%", limited, requests)
	}
	t.Logf("%d requests, %d answered 429", requests, limited)
}

// 5% 503, 5% cut-off bodies, token revocation every 50 requests and late
// data, while tailing with an overlap as large as the ingestion delay minus
// the lag: complete per truth (C1, C3, C5).
func TestFaultsTogetherLoseNothing(t *testing.T) {
	t.Parallel()
	const lateMax = 20 * time.Second
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.ErrorRate = 0.05
		c.CutRate = 0.05
		c.RevokeEvery = 50
		c.LateMax = lateMax
		c.RateLimit = 100_000
		c.Rates = map[string]float64{"dns": 3000, "connections": 2000, "audit_logs": 300, "edge_audit_events": 500}
	})
	start := time.Now().UTC().Add(-6 * time.Hour).Truncate(time.Minute)
	sources := []string{"dns", "connections", "audit_logs", "edge_audit_events"}
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: sources, Lag: 5 * time.Second, Overlap: 20 * time.Second,
		Env: []string{"COLLECTOR_API__RATE__LIMIT=100000", "COLLECTOR_EDGE__RATE__LIMIT=100000",
			"COLLECTOR_API__RETRY__INITIAL=50ms", "COLLECTOR_API__RETRY__MAX=500ms"}})
	p := c.Start(t)
	// Let it catch up and tail past the late-data horizon, then stop it.
	time.Sleep(12*time.Second + lateMax)
	p.Terminate()
	if err := p.Wait(t, time.Minute); err != nil {
		t.Fatalf("collector exited with %v after SIGTERM\n%s", err, p.Tail(30))
	}
	wms := c.Watermarks(t)
	// Records up to (watermark - overlap) were asked again after they all
	// became visible; compare exactly that far.
	for k, st := range wms {
		st.Watermark = st.Watermark.Add(-lateMax)
		wms[k] = st
	}
	out := c.ReadOutput(t)
	n := harness.CompareWithTruth(t, sim, out, harness.Streams(sources, harness.Accounts()), start, wms)
	if d := out.Duplicates(); d != 0 {
		t.Errorf("%d records delivered twice: errors, cut chains, revoked tokens and late records cost copies", d)
	}
	var e5, cut401 int64
	for _, cnt := range sim.Stats().Counters {
		e5 += cnt.ServerErrors
		cut401 += cnt.Unauthorized
	}
	if e5 == 0 || cut401 == 0 {
		t.Fatalf("faults did not fire: %d 5xx, %d 401", e5, cut401)
	}
	t.Logf("%d records; %d 5xx and %d 401 survived", n, e5, cut401)
}

// SIGKILL at random moments of a backfill, 20 times, restarting each time:
// finally complete per truth, and every record once in the files (issue
// 22: a restart cuts what the checkpoint does not cover, and asks the
// window in flight again without delivering what it delivered).
func TestCrashesAtRandomMomentsLoseNothing(t *testing.T) {
	t.Parallel()
	// A budget of 20 requests per 5 s and 500-row pages make the backfill
	// last about 15 s however fast the collector is, so that every kill
	// lands mid-backfill, often mid-chain.
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.PageSize = 500
		c.RateLimit = 20
		c.RatePeriod = 5 * time.Second
	})
	start := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Minute)
	const buffer = 10_000
	c := harness.New(t, harness.Config{Sim: sim, Start: start, PageRows: 500, Rate: harness.Rate{Limit: 20, Period: 5 * time.Second},
		Env: []string{fmt.Sprintf("COLLECTOR_PIPELINE__BUFFER_RECORDS=%d", buffer)}})
	rng := rand.New(rand.NewPCG(7, 7))
	kills := 0
	for i := 0; i < 20; i++ {
		p := c.Start(t, "--once")
		p.KillAfter(t, time.Duration(150+rng.IntN(500))*time.Millisecond, fmt.Sprintf("run %d", i))
		kills++
	}
	c.RunOnce(t, 5*time.Minute)
	out := c.ReadOutput(t)
	n := c.Compare(t, out, harness.AllStreams())
	dup := out.Duplicates()
	// Each kill can repeat what was fetched and not yet committed: at most
	// the buffer plus the pages being written.
	if dup != 0 {
		t.Errorf("%d duplicates after %d kills", dup, kills)
	}
	t.Logf("%d records complete after %d SIGKILLs; %d duplicates", n, kills, dup)
}

// A stalled sink (stdout into a pipe nobody reads) keeps memory bounded and
// the checkpoint still, however large the backlog (DESIGN: bounded channel).
func TestAStalledSinkKeepsMemoryBoundedAndTheCheckpointStill(t *testing.T) {
	t.Parallel()
	// Never read: the sink stalls once the pipe is full.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) { c.Rates = map[string]float64{"dns": 40_000, "connections": 40_000} })
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sink: "sink:\n  type: stdout\n", Stdout: pw,
		Metrics: harness.FreeAddr(t), Env: []string{"COLLECTOR_PIPELINE__BUFFER_RECORDS=5000"}})
	p := c.Start(t)
	defer p.Kill()
	metrics := c.Config().Metrics

	rssKB := func() int64 {
		m, err := harness.ReadProcMem(p.PID())
		if err != nil {
			t.Fatal(err)
		}
		return m.RSS / 1024
	}
	harness.WaitState(t, p, metrics, 30*time.Second, func(st map[record.Stream]harness.LiveStream) (bool, string) {
		return st != nil, "/state does not answer"
	})
	time.Sleep(3 * time.Second) // the pipe and the buffer fill
	first, rss1 := harness.LiveState(metrics), rssKB()
	time.Sleep(4 * time.Second)
	second, rss2 := harness.LiveState(metrics), rssKB()
	if first == nil || second == nil {
		t.Fatalf("no /state\n%s", p.Tail(20))
	}
	for k, v := range first {
		if second[k].Delivered != v.Delivered {
			t.Errorf("%s: delivered moved from %d to %d while the sink was stalled", k, v.Delivered, second[k].Delivered)
		}
	}
	// Room for a page is reserved before it is fetched: what the collector
	// fetched and the sink never acknowledged is the buffer plus the first
	// pages of windows split at the cap, however many streams wait.
	var served int64
	for _, cnt := range sim.Stats().Counters {
		served += cnt.RowsServed
	}
	delivered := harness.SumDelivered(second)
	t.Logf("rows served %d, delivered %d: %d fetched and held or discarded", served, delivered, served-delivered)
	// One reservation fits the 5,000-record buffer; the page it discards
	// when a window splits is replaced under the same reservation. Without
	// reservations each of the 18 pollers would hold a page (45,000 here).
	if held := served - delivered; held > 15_000 {
		t.Errorf("%d records fetched and not acknowledged with a 5,000-record buffer: pages are fetched without room", held)
	}
	// 5,000 buffered records of ~700 bytes: tens of MB. The backlog
	// (millions of records) must not show.
	if rss2 > 400_000 {
		t.Errorf("RSS %d kB with a stalled sink: memory is not bounded", rss2)
	}
	if rss2 > rss1+50_000 {
		t.Errorf("RSS grew from %d to %d kB while stalled", rss1, rss2)
	}
	t.Logf("RSS %d kB then %d kB while stalled", rss1, rss2)
}
