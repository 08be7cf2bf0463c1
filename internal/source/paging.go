package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// parsePage decodes a page body: the records under dataKey and, when
// present, the paging member (C3). Unknown members are skipped (seed:
// responses gain fields without notice). A nil body (204) is an empty page.
// A body that is not one complete JSON object is an error, so that a cut-off
// answer is retried rather than half-delivered (C5).
func parsePage(body []byte, dataKey string) (pageBody, error) {
	var p pageBody
	if len(bytes.TrimSpace(body)) == 0 {
		return p, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return p, fmt.Errorf("page: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return p, errors.New("page: not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return p, fmt.Errorf("page: %w", err)
		}
		key, _ := tok.(string)
		switch key {
		case dataKey:
			if err := dec.Decode(&p.Records); err != nil {
				return p, fmt.Errorf("page member %s: %w", dataKey, err)
			}
		case "paging":
			var pg *pagingJSON
			if err := dec.Decode(&pg); err != nil {
				return p, fmt.Errorf("page member paging: %w", err)
			}
			if pg != nil {
				p.HasPaging = true
				p.Rows, p.TotalRows = pg.Rows, pg.TotalRows
				if pg.Urls != nil && pg.Urls.NextPage != nil {
					p.Next = *pg.Urls.NextPage
				}
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return p, fmt.Errorf("page member %s: %w", key, err)
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return p, fmt.Errorf("page: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return p, errors.New("page: data after the JSON object")
	}
	for i, r := range p.Records {
		if len(r) == 0 || r[0] != '{' {
			return p, fmt.Errorf("page: record %d is not a JSON object", i)
		}
	}
	return p, nil
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
