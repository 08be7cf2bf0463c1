package window

import (
	"testing"
	"time"
)

func TestPaging(t *testing.T) {
	def := Paging{PageRows: 5000, ResultCap: 500_000, MaxPages: 100, NextPageTTL: 24 * time.Hour}
	t.Run("with nothing learnt the configured limits decide", func(t *testing.T) {
		if def.PageSize() != 5000 || def.SplitAt() != 500_000 || def.TTL() != 24*time.Hour || def.WalkPages() != 100 || def.PartRows() != 250_000 {
			t.Fatalf("%d %d %v %d %d", def.PageSize(), def.SplitAt(), def.TTL(), def.WalkPages(), def.PartRows())
		}
	})
	t.Run("a smaller full page seen lowers the split threshold to page size x max_pages", func(t *testing.T) {
		p := def
		p.MaxPages = 10
		if !p.Seen.SawFullPage(1000) || p.Seen.SawFullPage(1000) {
			t.Fatal("SawFullPage reports a change once")
		}
		if p.SplitAt() != 10_000 || p.PartRows() != 5000 {
			t.Fatalf("split at %d, part rows %d; want 10000 and 5000", p.SplitAt(), p.PartRows())
		}
		if k, trunc, _ := p.FirstSplit(40_000); !trunc || k != 8 {
			t.Fatalf("FirstSplit(40000) = %d parts, truncated %v; want 8, true", k, trunc)
		}
	})
	t.Run("an expiry teaches the next-page life and walks are sized to half of it", func(t *testing.T) {
		p := def
		p.PageRows = 500
		p.Seen.SawNextPage(300*time.Millisecond, 300*time.Millisecond)
		if exp, changed := p.Seen.SawExpiry(2 * time.Second); !exp || !changed {
			t.Fatal("a 404 older than every served next page is an expiry")
		}
		if p.TTL() != 2*time.Second || p.WalkPages() != 4 || p.PartRows() != 2000 {
			t.Fatalf("ttl %v, walk pages %d, part rows %d; want 2s, 4, 2000", p.TTL(), p.WalkPages(), p.PartRows())
		}
		if k := p.ExpiredParts(5000); k != 3 {
			t.Fatalf("ExpiredParts(5000) = %d, want 3 (10 pages, 4 a walk)", k)
		}
		if k, _, long := p.FirstSplit(5000); !long || k != 3 {
			t.Fatalf("FirstSplit(5000) = %d, long %v", k, long)
		}
		if k := p.ExpiredParts(100); k != 2 {
			t.Fatalf("ExpiredParts of one page = %d, want 2: never the same walk again", k)
		}
	})
	t.Run("a 404 younger than a served next page is a forgotten chain, not an expiry", func(t *testing.T) {
		var l Limits
		l.SawNextPage(10*time.Second, time.Second)
		if exp, _ := l.SawExpiry(5 * time.Second); exp || l.NextPageTTL != 0 {
			t.Fatalf("learnt %v from a forgotten chain", l.NextPageTTL)
		}
	})
	t.Run("slower pages count at once, faster ones slowly", func(t *testing.T) {
		var l Limits
		l.SawNextPage(0, time.Second)
		l.SawNextPage(0, 3*time.Second)
		if l.PageTime != 2*time.Second {
			t.Fatalf("page time %v, want 2s", l.PageTime)
		}
		l.SawNextPage(0, time.Second)
		if l.PageTime != 1800*time.Millisecond {
			t.Fatalf("page time %v, want 1.8s", l.PageTime)
		}
	})
	t.Run("a capped count says at least: the density's guess wins", func(t *testing.T) {
		p := def
		if !p.Seen.SawCappedCount(2000, 5000) || p.Seen.SawCappedCount(3000, 9000) {
			t.Fatal("SawCappedCount learns the lowest cap once")
		}
		if got := p.Estimate(2000, 1000, 24*time.Hour); got != 24_000 {
			t.Fatalf("Estimate = %d, want 24000", got)
		}
		if got := p.Estimate(1500, 1000, 24*time.Hour); got != 1500 {
			t.Fatalf("a count under the cap is true: %d", got)
		}
	})
	t.Run("a chain that ends short of its count teaches the server's chain cap (C3)", func(t *testing.T) {
		p := def
		if short, changed := p.Seen.SawChainEnd(147_579, 50_000); !short || !changed || p.Seen.ChainCap != 50_000 {
			t.Fatalf("short %v changed %v cap %d; want true true 50000", short, changed, p.Seen.ChainCap)
		}
		if p.SplitAt() != 50_000 || p.PartRows() != 25_000 {
			t.Fatalf("split at %d, part rows %d; want 50000 and 25000", p.SplitAt(), p.PartRows())
		}
		if k, trunc, _ := p.FirstSplit(147_579); !trunc || k != 6 {
			t.Fatalf("FirstSplit(147579) = %d parts, truncated %v; want 6, true", k, trunc)
		}
		if short, changed := p.Seen.SawChainEnd(90_000, 60_000); !short || changed {
			t.Fatal("a longer short chain is still short, and does not raise the cap")
		}
		if short, changed := p.Seen.SawChainEnd(20_000, 20_000); short || changed || p.Seen.ChainCap != 50_000 {
			t.Fatal("a whole chain under the cap changes nothing")
		}
		if short, changed := p.Seen.SawChainEnd(0, 10); short || changed {
			t.Fatal("a chain of unknown count teaches nothing")
		}
		if short, changed := p.Seen.SawChainEnd(70_000, 70_000); short || !changed || p.Seen.ChainCap != 0 {
			t.Fatalf("a whole chain longer than the cap seen proves it wrong: cap %d", p.Seen.ChainCap)
		}
	})
	t.Run("Planner takes the learnt sizes", func(t *testing.T) {
		p := def
		p.Seen.PageRows = 100
		pl := p.Planner(Planner{MaxWindow: time.Hour})
		if pl.ResultCap != 10_000 || pl.TargetRows != 5000 || pl.PageRows != 100 || pl.MaxWindow != time.Hour {
			t.Fatalf("%+v", pl)
		}
	})
	t.Run("Adopt keeps what was learnt and takes the rest", func(t *testing.T) {
		l := Limits{PageRows: 100}
		l.Adopt(Limits{PageRows: 200, CountCap: 7, NextPageTTL: time.Second, ChainAgeOK: time.Millisecond, PageTime: time.Minute, ChainCap: 9})
		if l != (Limits{PageRows: 100, CountCap: 7, NextPageTTL: time.Second, ChainAgeOK: time.Millisecond, PageTime: time.Minute, ChainCap: 9}) {
			t.Fatalf("%+v", l)
		}
	})
}
