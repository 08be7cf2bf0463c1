package apisim

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"testing"
	"time"
)

// truthHTTP asks GET /_truth (C8).
func (h *harness) truthHTTP(source, account string, start, end time.Time) (int64, string) {
	h.t.Helper()
	q := url.Values{"source": {source}, "account": {account},
		"start": {start.UTC().Format(time.RFC3339Nano)}, "end": {end.UTC().Format(time.RFC3339Nano)}}
	r := h.do("GET", h.sim.URL()+"/_truth?"+q.Encode(), nil, nil)
	if r.status != 200 {
		h.t.Fatalf("/_truth: %d %s", r.status, r.body)
	}
	var out struct {
		Count int64  `json:"count"`
		Xor   string `json:"xor"`
	}
	r.json(h.t, &out)
	return out.Count, out.Xor
}

// C8: for many random windows (deterministic seed) of every source, the
// records paged out of the API, deduplicated by C7 id, have the count and
// XOR that /_truth gives. Windows start and end at random milliseconds, so
// boundary minutes are cut anywhere; some are a few milliseconds long.
func TestC8TruthAgreesWithPagingOverRandomWindows(t *testing.T) {
	h := start(t, func(c *Config) { c.PageSize = 1000; c.ResultCap = 100000 })
	tok := h.adminToken()
	rng := rand.New(rand.NewPCG(7, 8))
	type target struct{ source, account string }
	var targets []target
	for src := sourceID(0); src < numSources; src++ {
		for _, a := range []string{"acme", "acme-dev"} {
			targets = append(targets, target{src.info().name, a})
		}
	}
	targets = append(targets, target{SourceAuditLogs, OrgAccount})
	for k := 0; k < 60; k++ {
		tg := targets[k%len(targets)]
		si, _ := sourceByName(tg.source)
		var length time.Duration
		switch k % 3 {
		case 0:
			length = time.Duration(1+rng.IntN(20)) * time.Millisecond
		case 1:
			length = time.Duration(rng.Int64N(int64(3 * time.Minute)))
		default:
			length = time.Duration(rng.Int64N(int64(40 * time.Minute)))
		}
		length = length.Truncate(time.Millisecond) + time.Millisecond
		end := testNow.Add(-time.Duration(rng.Int64N(int64(72 * time.Hour)))).Truncate(time.Millisecond)
		if k%7 == 0 {
			end = testNow // up to now
		}
		from := end.Add(-length)
		t.Run(fmt.Sprintf("%s/%s/%s+%s", tg.source, tg.account, from.Format(time.RFC3339Nano), length), func(t *testing.T) {
			count, xor := h.truthHTTP(tg.source, tg.account, from, end)
			if c2, x2 := h.sim.Truth(tg.source, tg.account, from, end); c2 != count || x2 != xor {
				t.Fatalf("Truth() %d %s, /_truth %d %s", c2, x2, count, xor)
			}
			var hd map[string]string
			switch {
			case tg.account == OrgAccount:
				hd = map[string]string{"Org-Access": "true"}
			default:
				hd = map[string]string{"Account-Name": tg.account}
			}
			var served int64
			var hex string
			if si.info().edge {
				q := msq(from, end)
				if si == srcEdgeAlerts {
					q += "&status_filter=OPEN,IN_PROGRESS,CLOSED"
				}
				r := h.edge(si.info().path[len("/edge"):], q, hd)
				var er edgeReply
				r.json(t, &er)
				recs := er.AuditEvents
				if si == srcEdgeAlerts {
					recs = er.Alerts
				}
				// C6: the answer holds every account's records.
				d := digestOf(t, tg.source, ofAccount(t, recs, tg.account))
				served, hex = d.Count, d.Hex()
			} else {
				var recs, _ = h.walkSource(si, tok, hd, from, end)
				d := digestOf(t, tg.source, recs)
				served, hex = d.Count, d.Hex()
			}
			if served != count || hex != xor {
				t.Fatalf("served %d %s, truth %d %s", served, hex, count, xor)
			}
		})
	}
}

// walkSource walks a core source's window, by POST search or by GET for
// cloud activities.
func (h *harness) walkSource(si sourceID, tok string, hd map[string]string, from, end time.Time) ([]jsonRaw, []page) {
	if si != srcCloudActivities {
		return h.walk(si.info().path, tok, hd, timeFilter(from, end))
	}
	u := fmt.Sprintf("%s%s?startTime=%s&endTime=%s", h.sim.URL(), si.info().path,
		from.UTC().Format("2006-01-02T15:04:05.000Z"), end.UTC().Format("2006-01-02T15:04:05.000Z"))
	var recs []jsonRaw
	var pages []page
	for u != "" {
		r := h.get(u, tok, hd)
		if r.status == 204 {
			break
		}
		if r.status != 200 {
			h.t.Fatalf("%d %s", r.status, r.body)
		}
		var p page
		r.json(h.t, &p)
		pages = append(pages, p)
		recs = append(recs, p.Data...)
		u = p.Paging.URLs.NextPage
	}
	return recs, pages
}

// C3, C8: windows are half-open by record time, to the millisecond.
func TestC8WindowsAreHalfOpenToTheMillisecond(t *testing.T) {
	h := start(t, nil)
	tok := h.adminToken()
	st := h.sim.stream(srcDNS, "acme")
	m := testNow.UnixMilli()/60000 - 30
	key := recKey(st.minuteBase(m), 0)
	at := time.UnixMilli(recTime(m, key))
	for _, c := range []struct {
		from, to time.Time
		in       bool
	}{
		{at, at.Add(time.Millisecond), true},
		{at.Add(-time.Millisecond), at, false},
		{at.Add(time.Millisecond), at.Add(time.Second), false},
		{at.Add(-time.Second), at.Add(time.Millisecond), true},
	} {
		recs, _ := h.walk(pathOf(SourceDNS), tok, nil, timeFilter(c.from, c.to))
		found := false
		for _, r := range recs {
			var x struct{ CreatedTime string }
			_ = jsonUnmarshal(r, &x)
			if pt, _ := time.Parse(time.RFC3339Nano, x.CreatedTime); pt.Equal(at) {
				found = true
			}
		}
		if found != c.in {
			t.Fatalf("[%v, %v): record at %v found %v, want %v", c.from, c.to, at, found, c.in)
		}
		if n, _ := h.sim.Truth(SourceDNS, "acme", c.from, c.to); n != int64(len(recs)) {
			t.Fatalf("truth %d, served %d", n, len(recs))
		}
	}
}

// C8: /_truth validates its parameters.
func TestC8TruthRejectsBadParameters(t *testing.T) {
	h := start(t, nil)
	for _, q := range []string{
		"source=dns&account=acme&start=2026-11-20T10:00:00Z",
		"source=dns&account=acme&start=2026-11-20&end=2026-11-21",
		"source=nosuch&account=acme&start=2026-11-20T10:00:00Z&end=2026-11-20T11:00:00Z",
		"source=dns&account=globex&start=2026-11-20T10:00:00Z&end=2026-11-20T11:00:00Z",
		"source=dns&account=org&start=2026-11-20T10:00:00Z&end=2026-11-20T11:00:00Z",
		"source=dns&account=acme&start=2026-11-20T11:00:00Z&end=2026-11-20T10:00:00Z",
	} {
		if r := h.do("GET", h.sim.URL()+"/_truth?"+q, nil, nil); r.status != 400 {
			t.Errorf("%s: %d", q, r.status)
		}
	}
	if n, x := h.sim.Truth("nosuch", "acme", testNow.Add(-time.Hour), testNow); n != -1 || x != "" {
		t.Errorf("Truth of an unknown source: %d %q", n, x)
	}
	// Records with time >= now do not exist: a window in the future is empty.
	if n, _ := h.sim.Truth(SourceDNS, "acme", testNow, testNow.Add(time.Hour)); n != 0 {
		t.Errorf("future window holds %d records", n)
	}
}
