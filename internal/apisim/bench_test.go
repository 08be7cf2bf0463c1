package apisim

import (
	"context"
	"testing"
)

// BenchmarkServePage generates and encodes 5,000-row pages (C3), the work
// behind one page answer minus the socket. Target: 300,000 rows/s per core
// (run with -cpu 1).
func BenchmarkServePage(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Now = newClock().Now
	cfg.Rates[SourceEdgeAlerts] = 1000 // enough rows in a week for the edge sources too
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	asOf := testNow.UnixMilli()
	for src := sourceID(0); src < numSources; src++ {
		st := s.stream(src, "acme")
		b.Run(st.src.info().name, func(b *testing.B) {
			pl := newPlan(st, asOf-7*24*3600*1000, asOf)
			if pl.n < 20000 {
				b.Skipf("window has %d rows only", pl.n)
			}
			pm := newPerm(uint64(pl.n), permKey(st, pl.start, pl.end))
			wk := &worker{}
			const size = 5000
			var rows, bytes int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				wk.rows = wk.rows[:0]
				from := int64(i*size) % (pl.n - size)
				n, _ := s.fillPage(wk, pl, &pm, from, asOf, nil, nil, size)
				rows += n
				bytes += int64(len(wk.rows))
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(bytes)/float64(rows), "B/row")
		})
	}
}

// BenchmarkTruthDay computes /_truth over one day of a stream of ~100,000
// rows a day (C8).
func BenchmarkTruthDay(b *testing.B) {
	clock := newClock()
	cfg := DefaultConfig()
	cfg.Now = clock.Now
	cfg.Rates[SourceDNS] = 100000.0 / 24
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	st := s.stream(srcDNS, "acme")
	end := testNow.UnixMilli()
	var rows int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, err := s.truth(context.Background(), st, end-24*3600*1000, end, end)
		if err != nil {
			b.Fatal(err)
		}
		rows += d.Count
	}
	b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1000, "ms/day")
}
