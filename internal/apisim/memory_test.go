package apisim

import (
	"runtime"
	"testing"
	"time"
)

// DESIGN ("The API simulator"): a 10-million-row window is served in
// constant memory. Page through its start and check the heap stays small.
func TestTenMillionRowWindowInConstantMemory(t *testing.T) {
	h := start(t, func(c *Config) {
		c.Rates[SourceDNS] = 10_500_000.0 / 24
		c.WaveAmplitude = 0
		c.BurstProbability = 0
	})
	tok := h.adminToken()
	from, to := testNow.Add(-24*time.Hour), testNow
	body := timeFilter(from, to)
	body["returns"] = []string{"mid"}
	// HeapAlloc after a GC catches what is kept; TotalAlloc catches what a
	// page allocates on the way (an index of the window's rows would be
	// 80 MB and more).
	mem := func() runtime.MemStats {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms
	}
	before := mem()
	r := h.search(pathOf(SourceDNS), tok, nil, body)
	var p page
	r.json(t, &p)
	if p.Paging.TotalRows < 10_000_000 {
		t.Fatalf("totalRows %d, want at least 10 million", p.Paging.TotalRows)
	}
	for i := 0; i < 5; i++ {
		r = h.get(p.Paging.URLs.NextPage, tok, nil)
		p = page{}
		r.json(t, &p)
		if len(p.Data) != 5000 {
			t.Fatalf("page %d has %d rows", i+2, len(p.Data))
		}
	}
	after := mem()
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 16<<20 {
		t.Fatalf("heap grew by %d MB serving a 10M-row window", grown>>20)
	}
	if total := after.TotalAlloc - before.TotalAlloc; total > 64<<20 {
		t.Fatalf("serving 6 pages of a 10M-row window allocated %d MB", total>>20)
	}
	t.Logf("heap before %d KB, after %d KB; allocated %d KB", before.HeapAlloc>>10, after.HeapAlloc>>10, (after.TotalAlloc-before.TotalAlloc)>>10)
}
