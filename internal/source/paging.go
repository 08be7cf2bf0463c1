package source

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/svcexport/collector/internal/window"
)

// pageBody is one decoded answer of a search or list request.
type pageBody struct {
	// HasPaging is set when the answer has a paging member: paging is in
	// effect only then (C3; audit logs may answer without it).
	HasPaging bool
	Rows      int
	TotalRows int64
	// Next is the next-page URL as sent, empty on the last page.
	Next    string
	Records []json.RawMessage
}

type pagingJSON struct {
	Rows      int   `json:"rows"`
	TotalRows int64 `json:"totalRows"`
	Urls      *struct {
		NextPage *string `json:"nextPage"`
	} `json:"urls"`
}

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

// firstPageURL returns the URL and body of the first request of window w
// (C3 for core, C6 for edge).
func firstPageURL(spec Spec, w window.Window, s SourceSettings, edge EdgeConfig) (string, []byte, error) {
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
