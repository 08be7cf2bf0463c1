package apisim

import "testing"

// FuzzSearchRequest feeds request parsing with arbitrary bodies, times and
// edge query strings (STYLE 13: fuzz every parser of outside input). It
// must never panic, and what it accepts must obey C3's window rules.
func FuzzSearchRequest(f *testing.F) {
	f.Add([]byte(`{"timeFilter":{"startTime":"2026-11-20T10:00:00Z","endTime":"2026-11-20T11:00:00.000Z"},"filters":[{"expression":"eq","field":"mid","value":"1"}],"returns":["mid"]}`),
		"2026-11-20T10:00:00.000Z", "start_time=1&end_time=2&status_filter=OPEN")
	f.Add([]byte(`{"filters":[{"expression":"between","field":"tags.\"kubernetes.io\\/role\"","values":["a","b"]}]}`), "2026-11-20T10:00:00Z", "")
	f.Add([]byte(`{"filters":[{"expression":"rlike","field":"endpointDetails.dst_port","value":"^4"}]}`), "x", "start_time=-1")
	f.Add([]byte(`{"filters":[{"expression":"like","field":"hostname","value":"a\\%_%"}]}`), "", "%zz")
	f.Add([]byte(``), "2026-02-30T10:00:00Z", "start_time=1&start_time=2")
	now := testNow
	cfg := DefaultConfig()
	rules := cfg.windowRules()
	streams := fuzzStreams(&cfg)
	f.Fuzz(func(t *testing.T, body []byte, ts, edgeQ string) {
		for _, src := range []sourceID{srcAgentInfo, srcConnections} {
			q, err := parseSearchBody(body, src.info(), now, rules)
			if err != nil {
				continue
			}
			if q.start >= q.end || q.end > now.UnixMilli() || q.end-q.start > rules.maxRange.Milliseconds() ||
				q.start < now.UnixMilli()-rules.maxHistory.Milliseconds() {
				t.Fatalf("accepted window [%d, %d) breaks C3", q.start, q.end)
			}
			// Accepted filters evaluate without panicking and survive the
			// round trip through a page token.
			var r rec
			g := generator{alertWindow: 1}
			g.generate(&r, streams[src], 12345, now.UnixMilli()-1000, now.UnixMilli())
			match(&r, q.filters)
			if _, err := parseFilters(q.filtersRaw, src.info()); err != nil {
				t.Fatalf("filters do not round-trip: %v", err)
			}
		}
		if tm, err := parseAPITime(ts); err == nil {
			form := "2006-01-02T15:04:05Z"
			if len(ts) == 24 {
				form = "2006-01-02T15:04:05.000Z"
			}
			if tm.Format(form) != ts {
				t.Fatalf("%q parsed as %v", ts, tm)
			}
		}
		_, _ = parseFieldPath(ts)
		for _, src := range []sourceID{srcEdgeAlerts, srcEdgeAuditEvents} {
			if q, err := parseEdgeQuery(edgeQ, src, now); err == nil && q.start >= q.end {
				t.Fatalf("edge window [%d, %d) accepted", q.start, q.end)
			}
		}
		_, _, _ = parseTokenBody(body)
	})
}

// fuzzStreams builds streams without a Server.
func fuzzStreams(cfg *Config) map[sourceID]*stream {
	out := map[sourceID]*stream{}
	for src := sourceID(0); src < numSources; src++ {
		out[src] = newStream(cfg, 1, src, "acme")
	}
	return out
}
