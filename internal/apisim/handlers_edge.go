package apisim

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// handleEdge serves the edge API (C6): GET audit_events and alerts with
// millisecond windows, no paging, at most edge_max_rows rows (the rest is
// dropped silently), one rate bucket (user "edge", functionality "edge").
// C6 has no account selection: the edge token alone decides what is
// served, the records of every account, and an Account-Name header is
// ignored.
func (s *Server) handleEdge(w http.ResponseWriter, r *http.Request, src sourceID) {
	now := s.now()
	tok, ok := bearer(r)
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.auth.edgeToken())) != 1 {
		s.stats.add("", fnEdge, func(c *Counter) { c.Requests++; c.Unauthorized++ })
		writeError(w, http.StatusUnauthorized, "authentication required: send Authorization: Bearer <edge token>")
		return
	}
	q := s.limits.take(edgeUser, fnEdge, now)
	q.setHeaders(w.Header())
	if !q.ok {
		s.stats.add(edgeUser, fnEdge, func(c *Counter) { c.Requests++; c.RateLimited++ })
		writeError(w, http.StatusTooManyRequests, "rate limit exceeded for the edge API")
		return
	}
	s.stats.add(edgeUser, fnEdge, func(c *Counter) { c.Requests++ })
	if strings.EqualFold(strings.TrimSpace(r.Header.Get("Org-Access")), "true") {
		writeError(w, http.StatusBadRequest, "Org-Access is not accepted by the edge API")
		return
	}
	eq, err := parseEdgeQuery(r.URL.RawQuery, src, now)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s.injectError(w, edgeUser, fnEdge) {
		return
	}
	var fs []filter
	if eq.statuses != nil {
		fs = []filter{{path: []string{"status"}, op: opIn, values: eq.statuses}}
	}
	nowMs := now.UnixMilli()
	limit := int64(s.cfg.EdgeMaxRows)
	wk := s.pool.Get().(*worker)
	defer s.pool.Put(wk)
	wk.rows = wk.rows[:0]
	var rows int64
	// C6: no account selection. The answer holds the records of every
	// account of the organization (each names its own in account_name),
	// account after account, and stops at edge_max_rows: the rest is
	// dropped silently.
	for _, a := range s.accounts {
		if limit > 0 && rows >= limit {
			break
		}
		st := s.stream(src, a)
		pl := newPlan(st, eq.start, min(eq.end, nowMs))
		if pl.n == 0 {
			continue
		}
		pm := newPerm(uint64(pl.n), permKey(st, pl.start, pl.end))
		lim := pl.n
		if limit > 0 {
			lim = min(lim, limit-rows)
		}
		// Edge records exist and are visible as of now, alerts in their
		// version as of now.
		n, _ := s.fillPage(wk, pl, &pm, 0, nowMs, fs, nil, lim)
		rows += n
	}
	h := append(wk.head[:0], `{"audit_events":[`...)
	if src == srcEdgeAlerts {
		h = append(wk.head[:0], `{"alerts":[`...)
	}
	wk.head = h
	s.stats.add(edgeUser, fnEdge, func(c *Counter) { c.RowsServed += rows; c.Pages++ })
	s.edges.add(EdgeQuery{Source: sourceTable[src].name, Start: time.UnixMilli(eq.start).UTC(), End: time.UnixMilli(eq.end).UTC(),
		Rows: rows, Full: limit > 0 && rows >= limit})
	s.sendData(w, r, wk.head, wk.rows, []byte("]}"))
}

type edgeQuery struct {
	start, end int64
	statuses   []string
}

// parseEdgeQuery validates an edge query string (C6): start_time required,
// end_time required for alerts (default now for audit events), both integer
// milliseconds; status_filter required for alerts, a comma-separated list of
// OPEN, IN_PROGRESS, CLOSED.
func parseEdgeQuery(raw string, src sourceID, now time.Time) (edgeQuery, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return edgeQuery{}, fmt.Errorf("malformed query string: %w", err)
	}
	alerts := src == srcEdgeAlerts
	for k, vs := range v {
		switch {
		case k == "start_time" || k == "end_time" || (alerts && k == "status_filter"):
		default:
			return edgeQuery{}, fmt.Errorf("unknown query parameter %q", k)
		}
		if len(vs) != 1 {
			return edgeQuery{}, fmt.Errorf("query parameter %s must be given once", k)
		}
	}
	ms := func(name string, required bool, def int64) (int64, error) {
		s := v.Get(name)
		if s == "" {
			if required {
				return 0, fmt.Errorf("%s is required (integer milliseconds)", name)
			}
			return def, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || s[0] == '+' {
			return 0, fmt.Errorf("%s must be integer milliseconds since the epoch", name)
		}
		return n, nil
	}
	var q edgeQuery
	if q.start, err = ms("start_time", true, 0); err != nil {
		return edgeQuery{}, err
	}
	if q.end, err = ms("end_time", alerts, now.UnixMilli()); err != nil {
		return edgeQuery{}, err
	}
	if q.start >= q.end {
		return edgeQuery{}, fmt.Errorf("start_time must be before end_time")
	}
	if alerts {
		sf := v.Get("status_filter")
		if sf == "" {
			return edgeQuery{}, fmt.Errorf("status_filter is required: a comma-separated list of OPEN, IN_PROGRESS, CLOSED")
		}
		for _, st := range strings.Split(sf, ",") {
			switch st {
			case "OPEN", "IN_PROGRESS", "CLOSED":
				q.statuses = append(q.statuses, st)
			default:
				return edgeQuery{}, fmt.Errorf("status_filter: unknown status %q (want OPEN, IN_PROGRESS or CLOSED)", st)
			}
		}
	}
	return q, nil
}
