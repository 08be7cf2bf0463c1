package apisim

import (
	"testing"
	"time"
)

// C3 (data arrives late): with late_max set, a record of time t is absent
// before t plus its delay and present after, and the truth agrees both times.
func TestC3LateRecordAppearsAtItsVisibilityTime(t *testing.T) {
	h := start(t, func(c *Config) { c.LateMax = time.Hour })
	tok := h.adminToken()
	st := h.sim.stream(srcUserLogins, "acme")
	now := testNow.UnixMilli()
	late := h.sim.lateness()
	// A record from ten minutes ago whose delay is over 20 minutes.
	var at, visibleAt int64
	for m := now/60000 - 10; at == 0; m++ {
		c := st.count(m, st.lambda(m/60))
		for i := uint32(0); int64(i) < c; i++ {
			key := recKey(st.minuteBase(m), i)
			if d := late.delay(key, recTime(m, key)); d > 20*60000 {
				at, visibleAt = recTime(m, key), recTime(m, key)+d
				break
			}
		}
	}
	from, to := time.UnixMilli(at), time.UnixMilli(at+1)
	if r := h.search(pathOf(SourceUserLogins), tok, nil, timeFilter(from, to)); r.status != 204 {
		t.Fatalf("before its visibility: %d %s", r.status, r.body)
	}
	if n, _ := h.sim.Truth(SourceUserLogins, "acme", from, to); n != 0 {
		t.Fatalf("truth counts an invisible record")
	}
	h.clock.Advance(time.Duration(visibleAt-now-1) * time.Millisecond)
	if r := h.search(pathOf(SourceUserLogins), tok, nil, timeFilter(from, to)); r.status != 204 {
		t.Fatalf("1 ms before its visibility: %d", r.status)
	}
	h.clock.Advance(time.Millisecond)
	recs, _ := h.walk(pathOf(SourceUserLogins), tok, nil, timeFilter(from, to))
	count, xor := h.sim.Truth(SourceUserLogins, "acme", from, to)
	if d := digestOf(t, SourceUserLogins, recs); d.Count != 1 || count != 1 || d.Hex() != xor {
		t.Fatalf("after its visibility: served %d, truth %d", d.Count, count)
	}
}

// C3: a chain sees the data as of its first page: records that become
// visible while it is walked do not shift its pages, and the chain yields
// exactly the truth as of its first page.
func TestC3ChainIsASnapshotUnderLateData(t *testing.T) {
	h := start(t, func(c *Config) { c.LateMax = 30 * time.Minute; c.PageSize = 500 })
	tok := h.adminToken()
	from, to := testNow.Add(-40*time.Minute), testNow
	count, xor := h.sim.Truth(SourceDNS, "acme", from, to)
	r := h.search(pathOf(SourceDNS), tok, nil, timeFilter(from, to))
	var p page
	r.json(t, &p)
	if p.Paging.TotalRows != count {
		t.Fatalf("totalRows %d, truth %d", p.Paging.TotalRows, count)
	}
	recs := p.Data
	for p.Paging.URLs.NextPage != "" {
		h.clock.Advance(time.Minute) // late records keep arriving
		r = h.get(p.Paging.URLs.NextPage, tok, nil)
		p = page{}
		r.json(t, &p)
		if p.Paging.TotalRows != count {
			t.Fatalf("totalRows moved to %d", p.Paging.TotalRows)
		}
		recs = append(recs, p.Data...)
	}
	if d := digestOf(t, SourceDNS, recs); d.Count != count || d.Hex() != xor {
		t.Fatalf("chain yielded %d, truth at its start %d", d.Count, count)
	}
	if later, _ := h.sim.Truth(SourceDNS, "acme", from, to); later <= count {
		t.Fatalf("no late data arrived during the walk (%d then %d)", count, later)
	}
}
