package apisim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// digestOf folds the C7 ids of raw records into a digest and fails on a
// duplicate id.
func digestOf(t testing.TB, source string, recs []json.RawMessage) record.Digest {
	t.Helper()
	var d record.Digest
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		id, err := record.ID(source, r)
		if err != nil {
			t.Fatalf("record.ID: %v", err)
		}
		if seen[id] {
			t.Fatalf("record served twice: %s", r)
		}
		seen[id] = true
		if err := d.Add(id); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// windowOfSize finds [start, end) ending before now with exactly n records
// of (source, account) by searching end in milliseconds.
func windowOfSize(t testing.TB, s *Server, source, account string, start time.Time, n int64) (time.Time, time.Time) {
	t.Helper()
	for try := 0; try < 50; try++ {
		st := start.Add(time.Duration(try) * 1234 * time.Millisecond)
		lo, hi := st.UnixMilli(), testNow.UnixMilli()
		if c, _ := s.Truth(source, account, st, time.UnixMilli(hi)); c < n {
			t.Fatalf("only %d records in [%v, now)", c, st)
		}
		for hi-lo > 1 { // count(lo) < n <= count(hi)
			mid := (lo + hi) / 2
			if c, _ := s.Truth(source, account, st, time.UnixMilli(mid)); c < n {
				lo = mid
			} else {
				hi = mid
			}
		}
		if c, _ := s.Truth(source, account, st, time.UnixMilli(hi)); c == n {
			return st, time.UnixMilli(hi)
		}
	}
	t.Fatalf("no window of exactly %d rows found", n)
	return time.Time{}, time.Time{}
}

// C3: a 12,345-row window comes back in three pages (5,000, 5,000, 2,345),
// every record exactly once, totalRows true on every page, and the set of
// ids is the ground truth's (C8).
func TestC3PagingReturns12345RowWindowExactlyOnceInThreePages(t *testing.T) {
	h := start(t, nil)
	from, to := windowOfSize(t, h.sim, SourceDNS, "acme", testNow.Add(-5*time.Hour), 12345)
	recs, pages := h.walk(pathOf(SourceDNS), h.adminToken(), nil, timeFilter(from, to))
	if len(pages) != 3 {
		t.Fatalf("%d pages, want 3", len(pages))
	}
	for i, want := range []int64{5000, 5000, 2345} {
		p := pages[i]
		if p.Paging == nil || p.Paging.Rows != want || int64(len(p.Data)) != want || p.Paging.TotalRows != 12345 {
			t.Fatalf("page %d: paging %+v with %d rows, want rows %d of 12345", i, p.Paging, len(p.Data), want)
		}
		if last := i == 2; last != (p.Paging.URLs.NextPage == "") {
			t.Fatalf("page %d: nextPage %q", i, p.Paging.URLs.NextPage)
		}
		if i < 2 && !strings.HasPrefix(p.Paging.URLs.NextPage, h.sim.URL()+"/") {
			t.Fatalf("nextPage %q is not a full URL of the server", p.Paging.URLs.NextPage)
		}
	}
	d := digestOf(t, SourceDNS, recs)
	count, xor := h.sim.Truth(SourceDNS, "acme", from, to)
	if d.Count != 12345 || count != 12345 || d.Hex() != xor {
		t.Fatalf("served %d %s, truth %d %s", d.Count, d.Hex(), count, xor)
	}
	// C3: records come in no promised order; the simulator shuffles them.
	sorted := true
	var prev string
	for _, r := range recs[:100] {
		var x struct{ CreatedTime string }
		_ = json.Unmarshal(r, &x)
		if x.CreatedTime < prev {
			sorted = false
		}
		prev = x.CreatedTime
	}
	if sorted {
		t.Error("records are in time order; the simulator should shuffle them")
	}
}

// C3: with total_rows_cap the first page's totalRows is capped (the service
// may cap the count) while the chain still serves every record, so a
// client cannot tell from totalRows alone how large the result set is.
func TestC3TotalRowsCapCapsTheCountNotTheChain(t *testing.T) {
	h := start(t, func(c *Config) { c.TotalRowsCap = 2000; c.PageSize = 1000 })
	from, to := windowOfSize(t, h.sim, SourceDNS, "acme", testNow.Add(-5*time.Hour), 4321)
	recs, pages := h.walk(pathOf(SourceDNS), h.adminToken(), nil, timeFilter(from, to))
	if len(pages) != 5 {
		t.Fatalf("%d pages, want 5", len(pages))
	}
	for i, p := range pages {
		if p.Paging == nil || p.Paging.TotalRows != 2000 {
			t.Fatalf("page %d: paging %+v, want totalRows capped at 2000", i, p.Paging)
		}
	}
	d := digestOf(t, SourceDNS, recs)
	if count, xor := h.sim.Truth(SourceDNS, "acme", from, to); d.Count != count || d.Hex() != xor || count != 4321 {
		t.Fatalf("served %d %s, truth %d %s", d.Count, d.Hex(), count, xor)
	}
	// Under the cap the count is true.
	from, to = windowOfSize(t, h.sim, SourceDNS, "acme", testNow.Add(-3*time.Hour), 1500)
	_, pages = h.walk(pathOf(SourceDNS), h.adminToken(), nil, timeFilter(from, to))
	if len(pages) != 2 || pages[0].Paging.TotalRows != 1500 {
		t.Fatalf("1,500 rows: %d pages, totalRows %+v", len(pages), pages[0].Paging)
	}
}

// C3: a window with more than 500,000 rows gives a chain that stops after
// 100 full pages although totalRows says more (and stays true on every page).
func TestC3ChainStopsAtResultCapWithTrueTotalRows(t *testing.T) {
	if testing.Short() {
		t.Skip("walks 500,000 rows")
	}
	h := start(t, nil) // production defaults: 5,000 a page, cap 500,000, 30,000 connections an hour
	from, to := testNow.Add(-30*time.Hour), testNow
	want, _ := h.sim.Truth(SourceConnections, "acme", from, to)
	if want <= 500000 {
		t.Fatalf("window has %d rows; the test needs more than 500,000", want)
	}
	body := timeFilter(from, to)
	body["returns"] = []string{"dstEntityId"} // keep the transfer small; pid_hash tells records apart
	recs, pages := h.walk(pathOf(SourceConnections), h.adminToken(), nil, body)
	if len(pages) != 100 || len(recs) != 500000 {
		t.Fatalf("%d pages and %d rows, want 100 and 500000", len(pages), len(recs))
	}
	for i, p := range pages {
		if p.Paging.TotalRows != want || p.Paging.Rows != 5000 {
			t.Fatalf("page %d: rows %d totalRows %d, want 5000 and %d", i, p.Paging.Rows, p.Paging.TotalRows, want)
		}
	}
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		var x struct {
			Dst struct {
				PidHash string `json:"pid_hash"`
			} `json:"dstEntityId"`
		}
		r := r
		if err := json.Unmarshal(r, &x); err != nil || x.Dst.PidHash == "" {
			t.Fatalf("record %s: %v", r, err)
		}
		if seen[x.Dst.PidHash] {
			t.Fatalf("record served twice: %s", r)
		}
		seen[x.Dst.PidHash] = true
	}
	if got := h.sim.Stats().Get("sim-admin", SourceConnections); got.RowsServed != 500000 || got.Requests != 100 {
		t.Fatalf("stats %+v", got)
	}
}

// C3: a next-page URL expires next_page_ttl after the first page (404), and
// an unknown or altered token answers 404 too.
func TestC3NextPageURLExpiresAndForgedTokensAre404(t *testing.T) {
	h := start(t, func(c *Config) { c.NextPageTTL = 2 * time.Second })
	tok := h.adminToken()
	r := h.search(pathOf(SourceDNS), tok, nil, timeFilter(testNow.Add(-2*time.Hour), testNow))
	var p page
	r.json(t, &p)
	next := p.Paging.URLs.NextPage
	if next == "" {
		t.Fatal("no next page")
	}
	h.clock.Advance(1500 * time.Millisecond)
	if r := h.get(next, tok, nil); r.status != http.StatusOK {
		t.Fatalf("within the TTL: %d %s", r.status, r.body)
	}
	h.clock.Advance(time.Second) // 2.5 s after the first page
	if r := h.get(next, tok, nil); r.status != http.StatusNotFound || r.message(t) == "" {
		t.Fatalf("after the TTL: %d %s", r.status, r.body)
	}
	i := strings.LastIndex(next, "/")
	tampered := []byte(next)
	tampered[i+5] ^= 1
	for _, u := range []string{string(tampered), next[:i+1] + "bm90LWEtdG9rZW4", h.sim.URL() + pathOf(SourceDNS) + "/pages/"} {
		if r := h.get(u, tok, nil); r.status != http.StatusNotFound {
			t.Fatalf("%s: %d %s", u, r.status, r.body)
		}
	}
	// A chain of one source is not a page of another.
	other := h.sim.URL() + pathOf(SourceUserLogins) + next[strings.Index(next, "/pages/"):]
	if r := h.get(other, tok, nil); r.status != http.StatusNotFound {
		t.Fatalf("page of dns under user_logins: %d", r.status)
	}
	if got := h.sim.Stats().Get("sim-admin", SourceDNS).NextPage404; got != 4 {
		t.Fatalf("next_page_404 = %d, want 4", got)
	}
}

// C3: the window rules and body limits answer 400 with a message.
func TestC3WindowAndBodyViolationsAre400(t *testing.T) {
	h := start(t, nil)
	tok := h.adminToken()
	iso := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }
	tf := func(s, e string) string {
		return fmt.Sprintf(`{"timeFilter":{"startTime":%q,"endTime":%q}}`, s, e)
	}
	big := `{"filters":[{"expression":"eq","field":"mid","value":"` + strings.Repeat("x", 1<<20) + `"}]}`
	cases := []struct {
		name string
		body string
		ct   string
		want int
	}{
		{"exactly seven days is fine", tf(iso(testNow.Add(-7*24*time.Hour)), iso(testNow)), "", 200},
		{"over seven days", tf(iso(testNow.Add(-7*24*time.Hour-time.Second)), iso(testNow)), "", 400},
		{"start before 92 days of history", tf(iso(testNow.Add(-92*24*time.Hour-time.Hour)), iso(testNow.Add(-92*24*time.Hour+time.Hour))), "", 400},
		{"start equal to end", tf(iso(testNow.Add(-time.Hour)), iso(testNow.Add(-time.Hour))), "", 400},
		{"start after end", tf(iso(testNow.Add(-time.Hour)), iso(testNow.Add(-2*time.Hour))), "", 400},
		{"start in the future (end read as now)", tf(iso(testNow.Add(time.Hour)), iso(testNow.Add(2*time.Hour))), "", 400},
		{"future end is read as now", tf(iso(testNow.Add(-time.Hour)), iso(testNow.Add(time.Hour))), "", 200},
		{"milliseconds form", `{"timeFilter":{"startTime":"2026-11-20T10:00:00.000Z","endTime":"2026-11-20T10:00:00.500Z"}}`, "", 200},
		{"date only form", `{"timeFilter":{"startTime":"2026-11-19","endTime":"2026-11-20"}}`, "", 400},
		{"offset instead of Z", `{"timeFilter":{"startTime":"2026-11-20T10:00:00+00:00","endTime":"2026-11-20T11:00:00Z"}}`, "", 400},
		{"two fraction digits", `{"timeFilter":{"startTime":"2026-11-20T10:00:00.00Z","endTime":"2026-11-20T11:00:00Z"}}`, "", 400},
		{"time as a number", `{"timeFilter":{"startTime":1763632800000}}`, "", 400},
		{"unknown member in timeFilter", `{"timeFilter":{"start":"2026-11-20T10:00:00Z"}}`, "", 400},
		{"unknown member in body", `{"timefilter":{}}`, "", 400},
		{"not JSON", `{"timeFilter":`, "", 400},
		{"an array body", `[]`, "", 400},
		{"body over 1 MB", big, "", 400},
		{"no timeFilter means the last 24 hours", `{}`, "", 200},
		{"empty body", ``, "", 200},
		{"content type text", `{}`, "text/plain", 400},
		{"content type with charset", `{}`, "application/json; charset=utf-8", 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hd := map[string]string{}
			if c.ct != "" {
				hd["Content-Type"] = c.ct
			}
			r := h.search(pathOf(SourceUserLogins), tok, hd, c.body)
			if r.status != c.want {
				t.Fatalf("status %d, want %d: %.300s", r.status, c.want, r.body)
			}
			if c.want == 400 {
				r.message(t)
			}
		})
	}
	// GET CloudActivities: the same time rules on the query string.
	base := h.sim.URL() + pathOf(SourceCloudActivities)
	for q, want := range map[string]int{
		"?startTime=" + iso(testNow.Add(-time.Hour)) + "&endTime=" + iso(testNow):      200,
		"?startTime=" + iso(testNow.Add(-8*24*time.Hour)) + "&endTime=" + iso(testNow): 400,
		"?startTime=" + iso(testNow.Add(-time.Hour)):                                   200,
		"?startTime=" + iso(testNow.Add(-time.Hour)) + "&foo=1":                        400,
		"?startTime=2026-11-20": 400,
		"?startTime=" + iso(testNow.Add(-time.Hour)) + "&startTime=" + iso(testNow): 400,
		"": 200,
	} {
		if r := h.get(base+q, tok, nil); r.status != want {
			t.Errorf("GET CloudActivities%s: %d, want %d: %.200s", q, r.status, want, r.body)
		}
	}
}

// C3: an empty result answers 204 without a body.
func TestC3EmptyResultIs204(t *testing.T) {
	h := start(t, func(c *Config) { c.Rates[SourceAuditLogs] = 0 })
	r := h.search(pathOf(SourceAuditLogs), h.adminToken(), nil, timeFilter(testNow.Add(-time.Hour), testNow))
	if r.status != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("%d %q", r.status, r.body)
	}
}

// C3: AuditLogs answers without paging when the result fits in one page,
// and pages like the others when it does not.
func TestC3AuditLogsOnePageWithoutPaging(t *testing.T) {
	h := start(t, func(c *Config) { c.PageSize = 100; c.ResultCap = 1000 })
	tok := h.adminToken()
	small := timeFilter(testNow.Add(-10*time.Minute), testNow)
	n, _ := h.sim.Truth(SourceAuditLogs, "acme", testNow.Add(-10*time.Minute), testNow)
	if n == 0 || n > 100 {
		t.Fatalf("window holds %d audit logs", n)
	}
	r := h.search(pathOf(SourceAuditLogs), tok, nil, small)
	if r.status != 200 || bytes.Contains(r.body, []byte(`"paging"`)) {
		t.Fatalf("%d %.200s", r.status, r.body)
	}
	var p page
	r.json(t, &p)
	if int64(len(p.Data)) != n {
		t.Fatalf("%d rows, want %d", len(p.Data), n)
	}
	recs, pages := h.walk(pathOf(SourceAuditLogs), tok, nil, timeFilter(testNow.Add(-3*time.Hour), testNow))
	if len(pages) < 2 || pages[0].Paging == nil {
		t.Fatalf("%d pages, first paging %v", len(pages), pages[0].Paging)
	}
	count, xor := h.sim.Truth(SourceAuditLogs, "acme", testNow.Add(-3*time.Hour), testNow)
	if d := digestOf(t, SourceAuditLogs, recs); d.Count != count || d.Hex() != xor {
		t.Fatalf("walked %d, truth %d", d.Count, count)
	}
}

// C3: GET CloudActivities pages like the searches; its next pages are GETs
// under its own path.
func TestC3CloudActivitiesPagesByGET(t *testing.T) {
	h := start(t, func(c *Config) { c.PageSize = 700 })
	tok := h.adminToken()
	from, to := testNow.Add(-20*time.Minute), testNow
	u := fmt.Sprintf("%s%s?startTime=%s&endTime=%s", h.sim.URL(), pathOf(SourceCloudActivities),
		from.Format("2006-01-02T15:04:05Z"), to.Format("2006-01-02T15:04:05Z"))
	var recs []json.RawMessage
	pages := 0
	for u != "" {
		r := h.get(u, tok, nil)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var p page
		r.json(t, &p)
		recs = append(recs, p.Data...)
		pages++
		u = p.Paging.URLs.NextPage
	}
	count, xor := h.sim.Truth(SourceCloudActivities, "acme", from, to)
	if d := digestOf(t, SourceCloudActivities, recs); d.Count != count || d.Hex() != xor || pages < 3 {
		t.Fatalf("walked %d rows in %d pages, truth %d", d.Count, pages, count)
	}
}
