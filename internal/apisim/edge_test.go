package apisim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func (h *harness) edge(path string, q string, headers map[string]string) reply {
	h.t.Helper()
	hd := map[string]string{"Authorization": "Bearer sim-edge-token"}
	for k, v := range headers {
		hd[k] = v
	}
	return h.do("GET", h.sim.EdgeURL()+path+q, hd, nil)
}

func msq(start, end time.Time) string {
	return fmt.Sprintf("?start_time=%d&end_time=%d", start.UnixMilli(), end.UnixMilli())
}

type edgeReply struct {
	AuditEvents []json.RawMessage `json:"audit_events"`
	Alerts      []json.RawMessage `json:"alerts"`
}

// ofAccount returns the edge records of recs whose account_name is account.
func ofAccount(t *testing.T, recs []json.RawMessage, account string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, raw := range recs {
		var x struct {
			AccountName *string `json:"account_name"`
		}
		if err := json.Unmarshal(raw, &x); err != nil || x.AccountName == nil {
			t.Fatalf("edge record without account_name: %s", raw)
		}
		if *x.AccountName == account {
			out = append(out, raw)
		}
	}
	return out
}

// C6: the edge endpoints, their parameters and their errors. The edge API
// has no account selection: one answer holds the records of every account,
// each naming its own in account_name, whatever Account-Name says.
func TestC6EdgeRequests(t *testing.T) {
	h := start(t, nil)
	from, to := testNow.Add(-2*time.Hour), testNow
	r := h.edge("/api/v1/audit_events", msq(from, to), nil)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var er edgeReply
	r.json(t, &er)
	digestOf(t, SourceEdgeAuditEvents, er.AuditEvents) // distinct
	var total int
	for _, a := range []string{"acme", "acme-dev"} {
		recs := ofAccount(t, er.AuditEvents, a)
		count, xor := h.sim.Truth(SourceEdgeAuditEvents, a, from, to)
		if d := digestOf(t, SourceEdgeAuditEvents, recs); d.Count != count || d.Hex() != xor || count == 0 {
			t.Fatalf("%s: served %d, truth %d", a, d.Count, count)
		}
		total += len(recs)
	}
	if total != len(er.AuditEvents) {
		t.Fatalf("%d of %d records belong to no account of the organization", len(er.AuditEvents)-total, len(er.AuditEvents))
	}
	if _, _, _ = rateHeaders(t, r); r.header.Get("RateLimit-Remaining") != "479" {
		t.Fatalf("edge bucket: %v", r.header)
	}
	// Account-Name selects nothing (C6): the same records come back.
	all := len(er.AuditEvents)
	r = h.edge("/api/v1/audit_events", msq(from, to), map[string]string{"Account-Name": "ACME-DEV"})
	er = edgeReply{}
	r.json(t, &er)
	if len(er.AuditEvents) != all {
		t.Fatalf("with Account-Name: %d records, without: %d", len(er.AuditEvents), all)
	}
	r = h.edge("/api/v1/alerts", msq(from, to)+"&status_filter=OPEN,IN_PROGRESS,CLOSED", nil)
	r.json(t, &er)
	count, xor := h.sim.Truth(SourceEdgeAlerts, "acme-dev", from, to)
	if d := digestOf(t, SourceEdgeAlerts, ofAccount(t, er.Alerts, "acme-dev")); d.Count != count || d.Hex() != xor || count == 0 {
		t.Fatalf("alerts served %d, truth %d", d.Count, count)
	}
	// end_time is optional for audit events (now).
	r = h.edge("/api/v1/audit_events", fmt.Sprintf("?start_time=%d", from.UnixMilli()), nil)
	r.json(t, &er)
	if len(er.AuditEvents) != all {
		t.Fatalf("without end_time: %d rows, want %d", len(er.AuditEvents), all)
	}
	s, e := from.UnixMilli(), to.UnixMilli()
	cases := []struct {
		name, path, q string
		headers       map[string]string
		want          int
	}{
		{"alerts without status_filter", "/api/v1/alerts", msq(from, to), nil, 400},
		{"alerts with an unknown status", "/api/v1/alerts", msq(from, to) + "&status_filter=OPEN,DONE", nil, 400},
		{"alerts with an empty status", "/api/v1/alerts", msq(from, to) + "&status_filter=OPEN,", nil, 400},
		{"alerts without end_time", "/api/v1/alerts", fmt.Sprintf("?start_time=%d&status_filter=OPEN", s), nil, 400},
		{"without start_time", "/api/v1/audit_events", fmt.Sprintf("?end_time=%d", e), nil, 400},
		{"seconds as RFC 3339", "/api/v1/audit_events", "?start_time=2026-11-20T10:00:00Z", nil, 400},
		{"start after end", "/api/v1/audit_events", fmt.Sprintf("?start_time=%d&end_time=%d", e, s), nil, 400},
		{"unknown parameter", "/api/v1/audit_events", msq(from, to) + "&limit=5", nil, 400},
		{"status_filter on audit events", "/api/v1/audit_events", msq(from, to) + "&status_filter=OPEN", nil, 400},
		{"an unknown account is ignored too", "/api/v1/audit_events", msq(from, to), map[string]string{"Account-Name": "globex"}, 200},
		{"Org-Access", "/api/v1/audit_events", msq(from, to), map[string]string{"Org-Access": "true"}, 400},
		{"wrong token", "/api/v1/audit_events", msq(from, to), map[string]string{"Authorization": "Bearer nope"}, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.edge(c.path, c.q, c.headers)
			if r.status != c.want {
				t.Fatalf("%d, want %d: %s", r.status, c.want, r.body)
			}
			if c.want != 200 {
				r.message(t)
			}
		})
	}
	if got := h.sim.Stats().Get(edgeUser, fnEdge); got.Requests != 15 || got.Unauthorized != 0 {
		t.Fatalf("edge stats %+v", got)
	}
}

// C6: an edge answer holds at most edge_max_rows rows and drops the rest
// silently: exactly max rows, no error, no paging.
func TestC6EdgeTruncatesSilentlyAtMaxRows(t *testing.T) {
	h := start(t, func(c *Config) { c.Rates[SourceEdgeAuditEvents] = 60000 })
	from, to := testNow.Add(-time.Hour), testNow
	count, _ := h.sim.Truth(SourceEdgeAuditEvents, "acme", from, to)
	dev, _ := h.sim.Truth(SourceEdgeAuditEvents, "acme-dev", from, to)
	if count += dev; count <= 10000 {
		t.Fatalf("window has %d rows; the test needs more than 10,000", count)
	}
	r := h.edge("/api/v1/audit_events", msq(from, to), nil)
	var er edgeReply
	r.json(t, &er)
	if r.status != 200 || len(er.AuditEvents) != 10000 {
		t.Fatalf("%d with %d rows, want 200 with exactly 10000", r.status, len(er.AuditEvents))
	}
	digestOf(t, SourceEdgeAuditEvents, er.AuditEvents) // distinct
	half := h.edge("/api/v1/audit_events", msq(from, from.Add(time.Minute)), nil)
	if half.status != 200 {
		t.Fatalf("a minute's window: %d", half.status)
	}
	// The log says what was asked and which answer was full.
	qs := h.sim.EdgeQueries()
	if len(qs) != 2 || qs[0].Source != SourceEdgeAuditEvents || !qs[0].Start.Equal(from) || !qs[0].End.Equal(to) ||
		qs[0].Rows != 10000 || !qs[0].Full || qs[1].Full || !qs[1].End.Equal(from.Add(time.Minute)) || qs[1].Rows >= 10000 {
		t.Fatalf("edge queries %+v", qs)
	}
	for _, raw := range er.AuditEvents {
		var x struct {
			CreateTime int64 `json:"create_time"`
		}
		if err := json.Unmarshal(raw, &x); err != nil || x.CreateTime < from.UnixMilli() || x.CreateTime >= to.UnixMilli() {
			t.Fatalf("record outside the window: %s", raw)
		}
	}
}

// C6: alerts change after creation; the edge API serves, and the truth
// hashes, the version as of the request.
func TestC6AlertUpdatesAreServedAsOfNow(t *testing.T) {
	h := start(t, nil)
	st := h.sim.stream(srcEdgeAlerts, "acme")
	now := testNow.UnixMilli()
	// Find an alert created in the last hour with two updates still to come.
	var created int64
	var upd [2]int64
	for m := now/60000 - 60; m < now/60000 && created == 0; m++ {
		c := st.count(m, st.lambda(m/60))
		for i := uint32(0); int64(i) < c; i++ {
			key := recKey(st.minuteBase(m), i)
			t0 := recTime(m, key)
			if v, u, n := alertVersion(key, t0, now, h.sim.gen.alertWindow); n == 2 && v == 0 && t0 < now {
				created, upd = t0, u
				break
			}
		}
	}
	if created == 0 {
		t.Fatal("no alert with pending updates")
	}
	from, to := time.UnixMilli(created), time.UnixMilli(created+1)
	type alert struct {
		Status     string `json:"status"`
		Incident   string `json:"incident_status"`
		Owner      string `json:"owner_uuid"`
		UpdateTime int64  `json:"update_time"`
		CreateTime int64  `json:"create_time"`
	}
	fetch := func(filter string) []alert {
		t.Helper()
		r := h.edge("/api/v1/alerts", msq(from, to)+"&status_filter="+filter, nil)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var er edgeReply
		r.json(t, &er)
		var out []alert
		for _, raw := range er.Alerts {
			var a alert
			_ = json.Unmarshal(raw, &a)
			if a.CreateTime == created {
				out = append(out, a)
			}
		}
		return out
	}
	all := "OPEN,IN_PROGRESS,CLOSED"
	a := fetch(all)
	if len(a) != 1 || a[0].Status != "OPEN" || a[0].UpdateTime != created || a[0].Owner != "" {
		t.Fatalf("before its updates: %+v", a)
	}
	_, x0 := h.sim.Truth(SourceEdgeAlerts, "acme", from, to)
	h.clock.Advance(time.Duration(upd[0]-now) * time.Millisecond)
	a = fetch(all)
	if len(a) != 1 || a[0].Status != "IN_PROGRESS" || a[0].UpdateTime != upd[0] || a[0].Owner == "" {
		t.Fatalf("after the first update: %+v", a)
	}
	if len(fetch("OPEN")) != 0 || len(fetch("IN_PROGRESS")) != 1 {
		t.Fatal("status_filter does not follow the current status")
	}
	_, x1 := h.sim.Truth(SourceEdgeAlerts, "acme", from, to)
	h.clock.Advance(time.Duration(upd[1]-upd[0]) * time.Millisecond)
	a = fetch("CLOSED")
	if len(a) != 1 || a[0].UpdateTime != upd[1] || a[0].Incident == "INVESTIGATING" {
		t.Fatalf("after the second update: %+v", a)
	}
	_, x2 := h.sim.Truth(SourceEdgeAlerts, "acme", from, to)
	if x0 == x1 || x1 == x2 {
		t.Fatal("the truth does not follow the alert's versions")
	}
	if r := h.edge("/api/v1/alerts", msq(from, to), nil); r.status != http.StatusBadRequest {
		t.Fatalf("no status_filter: %d", r.status)
	}
}
