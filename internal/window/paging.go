package window

import (
	"math"
	"time"
)

// Limits are what a stream learnt of a server's result sets from its
// answers (C3), because a real service may differ from any configured
// default. The zero Limits knows nothing; Paging then uses the configured
// values. Its Saw methods are pure: they change the value and report
// whether it changed.
type Limits struct {
	// PageRows is the size of the last full page seen: a page followed by
	// a next page. 0 until one was seen.
	PageRows int
	// CountCap is a totalRows the server was seen to cap the count at: a
	// chain brought more rows than its first page's totalRows said. From
	// then on a totalRows at or over it says only "at least". 0: none seen.
	CountCap int64
	// NextPageTTL is the youngest chain age at which a next-page URL was
	// refused with 404 (C3: expired): an upper bound of the server's
	// next-page life. 0: none seen.
	NextPageTTL time.Duration
	// ChainAgeOK is the oldest chain age at which a next page was still
	// served: a lower bound of that life. A 404 younger than it is a chain
	// the server forgot, not an expiry, and teaches nothing.
	ChainAgeOK time.Duration
	// PageTime is the average time from one page of a walk to the next,
	// waits included. 0 until a walk had two pages.
	PageTime time.Duration
	// ChainCap is the most rows the server was seen to serve in one
	// next-page chain: a chain ended with fewer rows than its first page's
	// totalRows said (C3: the service's own cap may be below the
	// configured api.result_cap). From then on result sets are split below
	// it. 0: none seen.
	ChainCap int64
}

// SawFullPage learns the page size from a page that had a next page: it
// was full (C3).
func (l *Limits) SawFullPage(rows int) bool {
	if rows <= 0 || l.PageRows == rows {
		return false
	}
	l.PageRows = rows
	return true
}

// SawCappedCount learns that the count is capped at total when a chain
// whose first page said total brought rows > total rows.
func (l *Limits) SawCappedCount(total, rows int64) bool {
	if total <= 0 || rows <= total || (l.CountCap > 0 && l.CountCap <= total) {
		return false
	}
	l.CountCap = total
	return true
}

// SawChainEnd learns from a chain whose first page said total rows (0:
// unknown) and that ended after rows rows. A chain that ended short of its
// count was cut by the server (C3: the count is the true size of the
// result set; late records only make a chain longer): its rows are the
// server's chain cap, unless a shorter one was seen. A chain that brought
// its whole count and more rows than the cap seen proves that cap wrong (a
// chain cut for another reason, a server that changed): it is forgotten.
// short reports a chain cut short of its count; changed a new ChainCap.
func (l *Limits) SawChainEnd(total, rows int64) (short, changed bool) {
	switch {
	case total <= 0 || rows <= 0:
		return false, false
	case rows < total:
		if l.ChainCap > 0 && l.ChainCap <= rows {
			return true, false
		}
		l.ChainCap = rows
		return true, true
	case l.ChainCap > 0 && rows > l.ChainCap:
		l.ChainCap = 0
		return false, true
	}
	return false, false
}

// SawNextPage learns from a next page served at chain age age, gap after
// the page before (0: unknown). Slower pages count at once, faster ones
// slowly: a walk planned too long expires, one planned too short costs
// only a first page more.
func (l *Limits) SawNextPage(age, gap time.Duration) {
	l.ChainAgeOK = max(l.ChainAgeOK, age)
	switch {
	case gap <= 0:
	case l.PageTime == 0:
		l.PageTime = gap
	case gap > l.PageTime:
		l.PageTime += (gap - l.PageTime) / 2
	default:
		l.PageTime -= (l.PageTime - gap) / 5
	}
}

// SawExpiry learns the next-page life from a next-page 404 at chain age
// age. expiry is false for a chain younger than one whose next page was
// served: it was forgotten, not expired; changed reports a new bound.
func (l *Limits) SawExpiry(age time.Duration) (expiry, changed bool) {
	if age <= l.ChainAgeOK || age <= 0 {
		return false, false
	}
	if l.NextPageTTL > 0 && l.NextPageTTL <= age {
		return true, false
	}
	l.NextPageTTL = age
	return true, true
}

// Adopt takes the values of o (from a checkpoint) that l has not learnt.
func (l *Limits) Adopt(o Limits) {
	if l.PageRows == 0 {
		l.PageRows = o.PageRows
	}
	if l.CountCap == 0 {
		l.CountCap = o.CountCap
	}
	if l.NextPageTTL == 0 {
		l.NextPageTTL = o.NextPageTTL
	}
	l.ChainAgeOK = max(l.ChainAgeOK, o.ChainAgeOK)
	if l.PageTime == 0 {
		l.PageTime = o.PageTime
	}
	if l.ChainCap == 0 {
		l.ChainCap = o.ChainCap
	}
}

// WalkShare is the part of the next-page life a walk is planned to take,
// so that a chain ends well within it (C3).
const WalkShare = 0.5

// Paging is what decides how a window is walked: the configured limits of
// result sets (C3) and the Limits learnt. Fields left zero take the
// contract's defaults. It is a value, pure, safe for concurrent use.
type Paging struct {
	// PageRows is api.page_rows (default 5,000), ResultCap api.result_cap
	// (default 500,000), MaxPages api.max_pages (default 100) and
	// NextPageTTL api.next_page_ttl (default 24h).
	PageRows    int64
	ResultCap   int64
	MaxPages    int64
	NextPageTTL time.Duration
	// TargetRows, when positive, bounds the rows a window is sized for.
	TargetRows int64
	// Seen is what was learnt.
	Seen Limits
}

func (p Paging) withDefaults() Paging {
	if p.PageRows <= 0 {
		p.PageRows = DefaultPageRows
	}
	if p.ResultCap <= 0 {
		p.ResultCap = DefaultResultCap
	}
	if p.MaxPages <= 0 {
		p.MaxPages = DefaultResultCap / DefaultPageRows
	}
	if p.NextPageTTL <= 0 {
		p.NextPageTTL = 24 * time.Hour
	}
	return p
}

// PageSize is the size of a full page: the one seen, else PageRows.
func (p Paging) PageSize() int64 {
	p = p.withDefaults()
	if p.Seen.PageRows > 0 {
		return int64(p.Seen.PageRows)
	}
	return p.PageRows
}

// SplitAt is the row count from which a result set may be truncated (C3):
// min(ResultCap, PageSize x MaxPages, the chain cap seen), as a chain stops
// at any of them.
func (p Paging) SplitAt() int64 {
	p = p.withDefaults()
	at := min(p.ResultCap, p.PageSize()*p.MaxPages)
	if p.Seen.ChainCap > 0 {
		at = min(at, p.Seen.ChainCap)
	}
	return at
}

// TTL is the next-page life walks are planned for: the shorter of the
// configured and the seen.
func (p Paging) TTL() time.Duration {
	p = p.withDefaults()
	if p.Seen.NextPageTTL > 0 {
		return min(p.NextPageTTL, p.Seen.NextPageTTL)
	}
	return p.NextPageTTL
}

// WalkPages is how many pages one chain can walk well within the next-page
// life at the page time seen (WalkShare of it), at most MaxPages and at
// least 1 (a first page needs no next-page URL).
func (p Paging) WalkPages() int64 {
	p = p.withDefaults()
	if p.Seen.PageTime <= 0 {
		return p.MaxPages
	}
	n := 1 + int64(math.Floor(float64(p.TTL())*WalkShare/float64(p.Seen.PageTime)))
	return min(max(n, 1), p.MaxPages)
}

// PartRows is how many rows a window is sized and split for: half of
// SplitAt (at most TargetRows), and no more than a chain walks within the
// next-page life.
func (p Paging) PartRows() int64 {
	t := max(p.SplitAt()/2, 1)
	if p.TargetRows > 0 {
		t = min(t, p.TargetRows)
	}
	return max(min(t, p.WalkPages()*p.PageSize()), 1)
}

// CountCapped reports whether totalRows is at or over the count cap seen:
// it says only "at least".
func (p Paging) CountCapped(totalRows int64) bool {
	return p.Seen.CountCap > 0 && totalRows >= p.Seen.CountCap
}

// Estimate is the rows a window of dur is taken to hold from its first
// page's totalRows: the count itself, or, when it is capped, at least the
// density's guess (rows per hour).
func (p Paging) Estimate(totalRows int64, density float64, dur time.Duration) int64 {
	if !p.CountCapped(totalRows) || !(density > 0) || math.IsInf(density, 0) {
		return totalRows
	}
	return max(totalRows, int64(math.Min(density*dur.Hours(), math.MaxInt64/2)))
}

// FirstSplit says whether a window of est rows (Estimate) cannot be walked
// whole: truncated when it may hold more than one result set yields,
// tooLong when its walk would outlive the next-page life. parts is how
// many parts to ask instead (PartRows each, at least 2).
func (p Paging) FirstSplit(est int64) (parts int64, truncated, tooLong bool) {
	truncated = est >= p.SplitAt()
	tooLong = ceilDiv(est, p.PageSize()) > p.WalkPages()
	if !truncated && !tooLong {
		return 0, false, false
	}
	return max(ceilDiv(est, p.PartRows()), 2), truncated, tooLong
}

// ExpiredParts is how many parts a window of at least rows rows is asked
// in after its chain expired: parts whose walks fit the next-page life
// seen, at least 2, so that the same walk is never repeated (C3).
func (p Paging) ExpiredParts(rows int64) int64 {
	return max(ceilDiv(ceilDiv(rows, p.PageSize()), p.WalkPages()), 2)
}

// CutParts is how many parts a window of at least rows rows is asked in
// after its chain stopped short of it (page cap, a chain ended at
// SplitAt): PartRows each, at least 2.
func (p Paging) CutParts(rows int64) int64 {
	return max(ceilDiv(rows, p.PartRows()), 2)
}

// Planner returns pl sized by p: ResultCap SplitAt and TargetRows PartRows,
// PageRows the page size, for Next, Remaining and SplitInto.
func (p Paging) Planner(pl Planner) Planner {
	pl.ResultCap = p.SplitAt()
	pl.TargetRows = min(p.PartRows(), pl.ResultCap)
	pl.PageRows = p.PageSize()
	return pl
}
