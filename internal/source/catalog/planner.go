package catalog

import (
	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/window"
)

// NewPlanner returns the window planner of one source (DESIGN item 1): the
// source's max_window, lag and overlap, the API's max_history, and a result
// cap that is the smaller of api.result_cap and page_rows * max_pages (C3:
// a chain stops at either). Edge sources use edge.max_rows as their cap
// (C6).
func NewPlanner(spec Spec, s SourceSettings, api api.Config, edge EdgeConfig) window.Planner {
	p := window.Planner{
		MaxWindow:  s.MaxWindow,
		Lag:        s.Lag,
		Overlap:    s.Overlap,
		MaxHistory: api.MaxHistory,
		ResultCap:  ResultCap(api),
		PageRows:   int64(api.PageRows),
	}
	if spec.Edge {
		p.ResultCap = int64(edge.MaxRows)
		p.PageRows = int64(edge.MaxRows)
	}
	return p
}

// ResultCap is the row count from which a core result set may be
// truncated (C3): the smaller of api.result_cap and page_rows * max_pages,
// as a chain stops at either.
func ResultCap(api api.Config) int64 {
	return min(api.ResultCap, int64(api.PageRows)*int64(api.MaxPages))
}
