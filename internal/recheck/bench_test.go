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
		if us := cfg.Due(log, now); len(us) == 0 {
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
	u := cfg.Due(log, log[len(log)-1].End.Add(2*time.Hour))[0]
	b.ReportAllocs()
	var reqs int
	for b.Loop() {
		reqs = run(b, u, truth, nil).Requests
	}
	b.ReportMetric(float64(reqs), "requests/unit")
}
