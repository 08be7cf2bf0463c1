package bench

import (
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// The budget benchmark's setting: a rate-limited simulator (60 tokens per
// 5 s per user and functionality, CONTRACT C4 with a short period), pages
// of 500 rows so that a day of data takes hundreds of requests, two
// accounts, all nine sources, a 24 h backfill. The collector is told the
// same limit and period (api.rate, edge.rate) and keeps its default
// reserve of 10 %.
const (
	budgetLimit    = 60
	budgetPeriod   = 5 * time.Second
	budgetReserve  = 0.1 // api.rate.reserve default
	budgetPageRows = 500
	budgetSpan     = 24 * time.Hour
	edgeMaxRows    = 10_000 // edge.max_rows default (C6)
)

// budgetRates are rows per hour per account: three dense sources that the
// budget holds back, and the rest at the end-to-end tests' modest rates.
var budgetRates = map[string]float64{
	"changed_files": 3000, "connections": 5000, "dns": 4000, "user_logins": 150, "agent_info": 60,
	"audit_logs": 40, "cloud_activities": 300, "edge_audit_events": 120, "edge_alerts": 30,
}

// BenchmarkBudget backfills a day against the rate-limited simulator with
// `collector run --once` and reports how well the budget is spent
// (ReportMetric; the log lists every bucket):
//
//   - req/lb: data and token requests the simulator counted, over the
//     lower bound LB = sum over streams of max(1, ceil(rows / P)) plus one
//     token request, where rows are the stream's distinct records
//     delivered (checked equal to /_truth) and P is the rows one request
//     can bring: api.page_rows (500) for core sources, edge.max_rows
//     (10,000) for edge sources, which have no paging (C6). No collector
//     can do with fewer: this is one perfectly sized window per stream.
//   - req/lb-win: requests over LBwin = sum over the windows the collector
//     actually delivered records from of max(1, ceil(rows_w / P)), plus
//     one per answer without records (an empty window), plus the token
//     requests. LBwin - LB is the cost of the planner's windows (a partial
//     last page per window); requests - LBwin is what else was spent:
//     first pages of windows split at the result cap (their rows are
//     dropped and asked again), edge alert re-asks (C6), retries.
//   - wall/min: the run's wall time over the least time the budget allows
//     for those requests, Tmin = max over (user, functionality) buckets of
//     max(0, n - L*(1-reserve)) / (L/period*(1-reserve)): the bucket
//     starts full, and the collector may spend only its share of it.
//   - wall/min-noreserve: the same with reserve 0, the least time the
//     server's bucket allows at all. A collector that leaves its reserve
//     to other clients has wall/min >= 1; one that keeps only a standing
//     reserve of tokens but spends the whole refill lands near
//     wall/min-noreserve = 1 and wall/min = 1 - reserve.
//   - 429s: answers 429 (the contract wants none from a healthy collector).
func BenchmarkBudget(b *testing.B) {
	for range b.N {
		sim := harness.StartSim(b, func(c *apisim.Config) {
			c.RateLimit, c.RatePeriod, c.PageSize = budgetLimit, budgetPeriod, budgetPageRows
			c.Rates = budgetRates
			c.AlertUpdateWindow = time.Minute // alerts are final before the collector's 2m lag reads them
		})
		c := harness.New(b, harness.Config{Sim: sim, Sources: harness.AllSources(),
			Start:    time.Now().UTC().Add(-budgetSpan - 2*time.Minute).Truncate(time.Minute),
			PageRows: budgetPageRows, Rate: harness.Rate{Limit: budgetLimit, Period: budgetPeriod}})
		res := c.RunOnce(b, 15*time.Minute)
		res.PeakRSS(b)
		res.DoneRows(b)
		b.StopTimer()
		stats := sim.Stats()
		out := readOutput(b, c.OutDir())
		_, truth := c.TruthRows(b)
		for k, n := range truth {
			if got := int64(len(out.ids[k])); got != n {
				b.Errorf("%s/%s: %d distinct records delivered, /_truth says %d", k.Source, k.Account, got, n)
			}
		}
		a := analyseBudget(stats, out, c.Streams())
		a.wall = res.Wall
		a.splits = harness.CountLogs(res.Logs, "window too large, split")
		a.log(b)
		b.ReportMetric(float64(a.requests)/float64(a.lb), "req/lb")
		b.ReportMetric(float64(a.requests)/float64(a.lbWin), "req/lb-win")
		b.ReportMetric(a.wall.Seconds()/a.tmin.Seconds(), "wall/min")
		b.ReportMetric(a.wall.Seconds()/a.tminFull.Seconds(), "wall/min-noreserve")
		if a.limited != 0 {
			b.Errorf("%d answers were 429: the budget let the collector overrun the bucket (C4)", a.limited)
		}
		b.ReportMetric(float64(a.limited), "429s")
		b.ReportMetric(float64(a.requests), "requests")
		b.ReportMetric(harness.LoadAvg1(), "load1")
		os.RemoveAll(c.OutDir())
		sim.Close()
		b.StartTimer()
	}
}

// output is what the file sink holds: distinct ids per stream, and
// distinct ids per (stream, window), ids as bytes to keep a large output
// small.
type output struct {
	ids     map[record.Stream]map[[32]byte]struct{}
	windows map[record.Stream]map[[2]string]map[[32]byte]struct{}
	lines   int64
}

// readOutput reads what the file sink wrote under dir.
func readOutput(tb testing.TB, dir string) *output {
	tb.Helper()
	o := &output{ids: map[record.Stream]map[[32]byte]struct{}{}, windows: map[record.Stream]map[[2]string]map[[32]byte]struct{}{}}
	harness.EachEnvelope(tb, dir, func(e *harness.Envelope, _ []byte) {
		var id [32]byte
		if n, err := hex.Decode(id[:], []byte(e.ID)); err != nil || n != 32 {
			tb.Fatalf("bad id %q", e.ID)
		}
		k := e.Stream()
		if o.ids[k] == nil {
			o.ids[k] = map[[32]byte]struct{}{}
			o.windows[k] = map[[2]string]map[[32]byte]struct{}{}
		}
		o.ids[k][id] = struct{}{}
		w := [2]string{e.WindowStart, e.WindowEnd}
		if o.windows[k][w] == nil {
			o.windows[k][w] = map[[32]byte]struct{}{}
		}
		o.windows[k][w][id] = struct{}{}
		o.lines++
	})
	return o
}

// budgetAnalysis holds the figures of one budgeted run.
type budgetAnalysis struct {
	requests, lb, lbWin  int64
	empty, limited       int64
	rowsServed, distinct int64
	windows, splits      int
	tmin, tminFull, wall time.Duration
	buckets              []bucketUse
}

type bucketUse struct {
	user, fn                  string
	requests, pages, limited  int64
	rowsServed, lb, lbWin     int64
	tmin                      time.Duration
	nextPage404, serverErrors int64
}

// functionality returns the simulator's bucket name of a source (C4):
// the source name for core sources, "edge" for both edge sources.
func functionality(src string) string {
	if strings.HasPrefix(src, "edge_") {
		return "edge"
	}
	return src
}

func pageRowsOf(src string) int64 {
	if strings.HasPrefix(src, "edge_") {
		return edgeMaxRows
	}
	return budgetPageRows
}

func analyseBudget(st apisim.Stats, out *output, streams []record.Stream) budgetAnalysis {
	var a budgetAnalysis
	lb := map[string]int64{}    // by functionality
	lbWin := map[string]int64{} // by functionality
	for _, k := range streams {
		fn, p := functionality(k.Source), pageRowsOf(k.Source)
		lb[fn] += requestLowerBound(int64(len(out.ids[k])), p)
		a.distinct += int64(len(out.ids[k]))
		for _, ids := range out.windows[k] {
			lbWin[fn] += requestLowerBound(int64(len(ids)), p)
			a.windows++
		}
	}
	for _, c := range st.Counters {
		u := bucketUse{user: c.User, fn: c.Functionality, requests: c.Requests, pages: c.Pages, limited: c.RateLimited,
			rowsServed: c.RowsServed, nextPage404: c.NextPage404, serverErrors: c.ServerErrors}
		empty := c.Requests - c.Pages - c.RateLimited - c.NextPage404 - c.Unauthorized - c.ServerErrors
		if c.Functionality == "token" {
			u.lb, u.lbWin = 1, 1 // one token (TTL 1h) serves the whole run
		} else {
			u.lb = lb[c.Functionality]
			u.lbWin = lbWin[c.Functionality] + empty
			a.empty += empty
		}
		u.tmin = minWall(c.Requests, budgetLimit, budgetPeriod, budgetReserve)
		a.tminFull = max(a.tminFull, minWall(c.Requests, budgetLimit, budgetPeriod, 0))
		a.requests += c.Requests
		a.limited += c.RateLimited
		a.rowsServed += c.RowsServed
		a.lb += u.lb
		a.lbWin += u.lbWin
		a.tmin = max(a.tmin, u.tmin)
		a.buckets = append(a.buckets, u)
	}
	slices.SortFunc(a.buckets, func(x, y bucketUse) int { return int(y.requests - x.requests) })
	return a
}

func (a budgetAnalysis) log(b *testing.B) {
	b.Logf("requests %d (lower bound %d, with the planner's windows %d; %d windows with records, %d empty answers, %d split logs), "+
		"429s %d, rows served %d for %d distinct records; wall %v, budget minimum %v (%v without the reserve); %s",
		a.requests, a.lb, a.lbWin, a.windows, a.empty, a.splits, a.limited, a.rowsServed, a.distinct,
		a.wall.Round(time.Millisecond), a.tmin.Round(time.Millisecond), a.tminFull.Round(time.Millisecond), harness.LoadNote())
	for _, u := range a.buckets {
		b.Logf("  %-10s %-17s requests %4d  lb %4d  lb-win %4d  pages %4d  429 %d  404 %d  5xx %d  rows %7d  Tmin %v",
			u.user, u.fn, u.requests, u.lb, u.lbWin, u.pages, u.limited, u.nextPage404, u.serverErrors, u.rowsServed, u.tmin.Round(time.Millisecond))
	}
}

// requestLowerBound is the fewest requests that can bring rows records when
// one request brings at most perRequest: at least one, to learn that a
// window is empty.
func requestLowerBound(rows, perRequest int64) int64 {
	if rows <= 0 {
		return 1
	}
	return (rows + perRequest - 1) / perRequest
}

// minWall is the least time in which n requests fit a bucket of limit
// tokens refilled at limit per period, of which the collector may use the
// share 1-reserve: the bucket starts full, so the first limit*(1-reserve)
// requests go at once and the rest at the refill rate.
func minWall(n int64, limit int, period time.Duration, reserve float64) time.Duration {
	capacity := float64(limit) * (1 - reserve)
	rate := capacity / period.Seconds()
	over := float64(n) - capacity
	if over <= 0 {
		return 0
	}
	return time.Duration(over / rate * float64(time.Second))
}

// The bound arithmetic of BenchmarkBudget.
func TestBudgetBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ rows, per, want int64 }{
		{0, 500, 1}, {1, 500, 1}, {500, 500, 1}, {501, 500, 2}, {120_000, 500, 240}, {9_999, 10_000, 1},
	} {
		if got := requestLowerBound(c.rows, c.per); got != c.want {
			t.Errorf("requestLowerBound(%d, %d) = %d, want %d", c.rows, c.per, got, c.want)
		}
	}
	// 60 per 5 s with a 10 % reserve: 54 at once, then 10.8 a second.
	for _, c := range []struct {
		n    int64
		want time.Duration
	}{{0, 0}, {54, 0}, {55, 92592592 * time.Nanosecond}, {54 + 108, 10 * time.Second}} {
		got := minWall(c.n, 60, 5*time.Second, 0.1)
		if d := got - c.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("minWall(%d) = %v, want %v", c.n, got, c.want)
		}
	}
}
