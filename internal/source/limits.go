package source

import (
	"time"

	"github.com/svcexport/collector/internal/window"
)

// learn changes the learnt limits with f, which reports whether it changed
// them, and updates their metrics.
func (p *Poller) learn(f func(*window.Limits) bool) bool {
	changed := p.st.Learn(f)
	p.m.Limits(p.cfg.Spec.Name, p.cfg.Account, p.st.Limits(), p.splitAt())
	return changed
}

// paging is the configured paging limits with what was learnt.
func (p *Poller) paging() window.Paging {
	a := p.cfg.API
	return window.Paging{PageRows: int64(a.PageRows), ResultCap: a.ResultCap, MaxPages: int64(a.MaxPages),
		NextPageTTL: a.NextPageTTL, TargetRows: p.plan.TargetRows, Seen: p.st.Limits()}
}

// splitAt is the row count from which a result set may be truncated:
// window.Paging.SplitAt, edge.max_rows for edge sources (C6).
func (p *Poller) splitAt() int64 {
	if p.cfg.Spec.Edge {
		return int64(p.cfg.Edge.MaxRows)
	}
	return p.paging().SplitAt()
}

// planner is the configured planner sized by what was learnt.
func (p *Poller) planner() window.Planner {
	if p.cfg.Spec.Edge {
		return p.plan
	}
	return p.paging().Planner(p.plan)
}

// sawFullPage learns the server's page size from a page that had a next
// page.
func (p *Poller) sawFullPage(rows int) {
	if p.cfg.Spec.Edge || !p.learn(func(l *window.Limits) bool { return l.SawFullPage(rows) }) || rows == p.cfg.API.PageRows {
		return
	}
	p.log.Info("the API's full pages differ from api.page_rows; splitting by what it sends",
		"page_rows_seen", rows, "api.page_rows", p.cfg.API.PageRows, "split_at", p.splitAt())
}

// sawCappedCount learns that the server caps totalRows at total.
func (p *Poller) sawCappedCount(total, rows int64) {
	if p.learn(func(l *window.Limits) bool { return l.SawCappedCount(total, rows) }) {
		p.log.Warn("the API caps totalRows: a chain brought more rows than its first page said; from now on such a count says only \"at least\"",
			"total_rows", total, "rows", rows)
	}
}

// sawChainEnd learns from a chain of a paged result set whose first page
// said total rows (0: unknown) and that ended after rows rows, and reports
// whether it ended short of its count: the server cut it (C3), and the
// window must be asked again in parts below the cap learnt.
func (p *Poller) sawChainEnd(total, rows int64) bool {
	if p.cfg.Spec.Edge {
		return false
	}
	var short bool
	if p.learn(func(l *window.Limits) bool { s, changed := l.SawChainEnd(total, rows); short = s; return changed }) {
		l := p.st.Limits()
		if l.ChainCap > 0 {
			p.log.Warn("the API ends next-page chains before their totalRows: splitting result sets below the chain cap seen",
				"chain_cap_seen", l.ChainCap, "total_rows", total, "api.result_cap", p.cfg.API.ResultCap, "split_at", p.splitAt())
		} else {
			p.log.Info("a chain brought more rows than the chain cap seen: that cap is forgotten", "rows", rows, "split_at", p.splitAt())
		}
	}
	return short
}

// sawNextPage learns from a next page served at chain age age, gap after
// the page before.
func (p *Poller) sawNextPage(age, gap time.Duration) {
	p.learn(func(l *window.Limits) bool { l.SawNextPage(age, gap); return true })
}

// sawExpiry learns the server's next-page life from a next-page 404 at
// chain age age.
func (p *Poller) sawExpiry(age time.Duration) {
	if p.learn(func(l *window.Limits) bool { _, changed := l.SawExpiry(age); return changed }) && age < p.cfg.API.NextPageTTL {
		p.log.Warn("next-page URLs expire sooner than api.next_page_ttl; sizing walks by what the API does",
			"next_page_ttl_seen", age.String(), "api.next_page_ttl", p.cfg.API.NextPageTTL.String())
	}
}
