package catalog

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/svcexport/collector/internal/window"
)

// apiTimeLayout is the milliseconds form of the core API (seed, C3).
const apiTimeLayout = "2006-01-02T15:04:05.000Z"

func apiTime(t time.Time) string { return t.UTC().Format(apiTimeLayout) }

// searchBody is the body of a core search (C3).
type searchBody struct {
	TimeFilter struct {
		StartTime string `json:"startTime"`
		EndTime   string `json:"endTime"`
	} `json:"timeFilter"`
	Filters []Filter `json:"filters,omitempty"`
	Returns []string `json:"returns,omitempty"`
}

// FirstPage returns the URL (relative to the API's base URL) and the body
// (nil for a GET) of the first request of window w of the source: a core
// search or list (C3) with the settings' filters and returns, or an edge
// query (C6) with edge.alert_status_filter for alerts.
func (spec Spec) FirstPage(w window.Window, s SourceSettings, edge EdgeConfig) (string, []byte, error) {
	if spec.Edge {
		q := url.Values{}
		q.Set("start_time", strconv.FormatInt(w.Start.UnixMilli(), 10))
		q.Set("end_time", strconv.FormatInt(w.End.UnixMilli(), 10))
		if spec.Name == SourceEdgeAlerts {
			q.Set("status_filter", edge.AlertStatusFilter)
		}
		return spec.Path + "?" + q.Encode(), nil, nil
	}
	if spec.Method == "GET" {
		q := url.Values{}
		q.Set("startTime", apiTime(w.Start))
		q.Set("endTime", apiTime(w.End))
		return spec.Path + "?" + q.Encode(), nil, nil
	}
	var b searchBody
	b.TimeFilter.StartTime = apiTime(w.Start)
	b.TimeFilter.EndTime = apiTime(w.End)
	b.Filters, b.Returns = s.Filters, s.Returns
	body, err := json.Marshal(b)
	if err != nil {
		return "", nil, fmt.Errorf("search body: %w", err)
	}
	return spec.Path, body, nil
}

// CountPage is FirstPage for a request made only to count w's records
// (C3: the first page's totalRows): a core search asks only for the
// record time field (returns names top-level fields, C3), so that the
// server serves no full rows to count; a GET list and an edge query
// (C6) have no returns and are FirstPage's. Its records are never
// delivered.
func (spec Spec) CountPage(w window.Window, s SourceSettings, edge EdgeConfig) (string, []byte, error) {
	if spec.Edge || spec.Method == "GET" || spec.TimeField == "" {
		return spec.FirstPage(w, s, edge)
	}
	s.Returns = []string{spec.TimeField}
	return spec.FirstPage(w, s, edge)
}

// inventoryBody is the body of an inventory walk: a core search without
// timeFilter.
type inventoryBody struct {
	Filters []Filter `json:"filters,omitempty"`
	Returns []string `json:"returns,omitempty"`
}

// InventoryPage returns the URL (relative to the API's base URL) and the
// body of the first request of an inventory walk of the source
// (Spec.Inventory): its search without timeFilter, with the settings'
// filters and returns. The seed gives no list of agents but this search;
// without timeFilter it covers the agents seen in the default range (24
// hours before now), each in its current state: the inventory's decision,
// which the project's simulator serves (docs/sources.md, "agents as an
// inventory").
func (spec Spec) InventoryPage(s SourceSettings) (string, []byte, error) {
	if !spec.Inventory {
		return "", nil, fmt.Errorf("%s is not read as an inventory", spec.Name)
	}
	body, err := json.Marshal(inventoryBody{Filters: s.Filters, Returns: s.Returns})
	if err != nil {
		return "", nil, fmt.Errorf("inventory search body: %w", err)
	}
	return spec.Path, body, nil
}
