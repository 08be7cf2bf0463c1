package recheck

import (
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// BenchmarkDue finds the due units of a full log (10,000 windows of 10
// seconds), what a poller does every interval.
func BenchmarkDue(b *testing.B) {
	cfg := fixedConfig()
	log := make([]cursor.LoggedWindow, 10_000)
	for i := range log {
		log[i] = cursor.LoggedWindow{Start: t0.Add(time.Duration(i) * 10 * time.Second), End: t0.Add(time.Duration(i+1) * 10 * time.Second), Count: 100}
	}
	now := log[len(log)-1].End.Add(90 * time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		if us := cfg.Plan().Due(log, now); len(us) == 0 {
			b.Fatal("nothing due")
		}
	}
}

// BenchmarkNarrowing narrows a unit of 2,880 windows in which 10 grew,
// counting from an in-memory truth: the cost of the decisions alone, and
// the requests a unit that large takes.
func BenchmarkNarrowing(b *testing.B) {
	cfg := fixedConfig()
	cfg.MaxSpan = 48 * time.Hour
	cfg.MaxRequests = 1000
	stored := make([]int64, 2880)
	for i := range stored {
		stored[i] = 6000
	}
	log := leaves(stored...)
	truth := append([]int64(nil), stored...)
	for i := range 10 {
		truth[i*287] += 3
	}
	u := cfg.Plan().Due(log, log[len(log)-1].End.Add(2*time.Hour))[0]
	b.ReportAllocs()
	var reqs int
	for b.Loop() {
		reqs = run(b, u, truth, nil).Requests
	}
	b.ReportMetric(float64(reqs), "requests/unit")
}

// BenchmarkWindowNarrowing narrows a grown 7-day window (12 rows a
// minute) below its bounds, its late records in four minutes, counting
// from an in-memory truth: the cost of the decisions alone.
func BenchmarkWindowNarrowing(b *testing.B) {
	cfg := DefaultConfig()
	delivered := make([]int64, 7*24*60)
	for i := range delivered {
		delivered[i] = 12
	}
	truth := append([]int64(nil), delivered...)
	for i := range 4 {
		truth[i*2500] += 5
	}
	f := grownWindow(0, delivered, sum(delivered), sum(truth))
	at := make([]int64, len(truth)+1) // at[i]: the truth of minutes [0, i)
	for i, c := range truth {
		at[i+1] = at[i] + c
	}
	count := func(q Query) int64 {
		return at[int(q.End.Sub(t0)/time.Minute)] - at[int(q.Start.Sub(t0)/time.Minute)]
	}
	b.ReportAllocs()
	var reqs int
	for b.Loop() {
		n, ok := f.NarrowWindow(delivered, cfg, false, cfg.MaxRequests)
		if !ok {
			b.Fatal("not narrowed")
		}
		for q, more := n.Next(); more; q, more = n.Next() {
			n.Observe(count(q))
		}
		reqs = n.Result().Requests
	}
	b.ReportMetric(float64(reqs), "requests/window")
}
