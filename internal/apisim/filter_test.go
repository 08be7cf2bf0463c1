package apisim

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// fetchAll walks a search and returns its records keyed by C7 id.
func fetchAll(t *testing.T, h *harness, tok, source string, body map[string]any) map[string]json.RawMessage {
	t.Helper()
	recs, _ := h.walk(pathOf(source), tok, nil, body)
	out := make(map[string]json.RawMessage, len(recs))
	for _, r := range recs {
		id, err := record.ID(source, r)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = r
	}
	return out
}

// lookup follows a dotted path through a decoded record; arrays fan out.
func lookup(v any, path []string) []any {
	if len(path) == 0 {
		return []any{v}
	}
	switch x := v.(type) {
	case map[string]any:
		if c, ok := x[path[0]]; ok {
			return lookup(c, path[1:])
		}
	case []any:
		var out []any
		for _, e := range x {
			out = append(out, lookup(e, path)...)
		}
		return out
	}
	return nil
}

func asString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatInt(int64(x), 10), true
	}
	return "", false
}

// Seed "Simple and advanced search": every expression selects exactly the
// records an independent evaluation selects, all filters AND-ed.
func TestSeedFiltersSelectWhatTheTableSays(t *testing.T) {
	h := start(t, nil)
	tok := h.adminToken()
	// About 3,000 records per source.
	window := func(source string) map[string]any {
		if source == SourceAgentInfo {
			return timeFilter(testNow.Add(-6*time.Hour), testNow)
		}
		return timeFilter(testNow.Add(-6*time.Minute), testNow)
	}
	type pred func(rec map[string]any) bool
	anyOf := func(path string, f func(v any) bool) pred {
		p, _ := parseFieldPath(path)
		return func(rec map[string]any) bool {
			for _, v := range lookup(rec, p) {
				if f(v) {
					return true
				}
			}
			return false
		}
	}
	num := func(path string, f func(n float64) bool) pred {
		return anyOf(path, func(v any) bool { n, ok := v.(float64); return ok && f(n) })
	}
	str := func(path string, f func(s string) bool) pred {
		return anyOf(path, func(v any) bool { s, ok := asString(v); return ok && f(s) })
	}
	not := func(p pred) pred { return func(r map[string]any) bool { return !p(r) } }
	cases := []struct {
		name    string
		source  string
		filters []map[string]any
		want    pred
	}{
		{"eq on an integer", SourceAgentInfo, []map[string]any{{"expression": "eq", "field": "mid", "value": "1007"}},
			num("mid", func(n float64) bool { return n == 1007 })},
		{"ne on a string", SourceAgentInfo, []map[string]any{{"expression": "ne", "field": "status", "value": "ACTIVE"}},
			not(str("status", func(s string) bool { return s == "ACTIVE" }))},
		{"in", SourceAgentInfo, []map[string]any{{"expression": "in", "field": "os", "values": []string{"Windows", "Darwin"}}},
			str("os", func(s string) bool { return s == "Windows" || s == "Darwin" })},
		{"not_in", SourceAgentInfo, []map[string]any{{"expression": "not_in", "field": "os", "values": []string{"Linux"}}},
			not(str("os", func(s string) bool { return s == "Linux" }))},
		{"gt numeric", SourceAgentInfo, []map[string]any{{"expression": "gt", "field": "mid", "value": "1200"}},
			num("mid", func(n float64) bool { return n > 1200 })},
		{"ge and le AND-ed", SourceAgentInfo, []map[string]any{{"expression": "ge", "field": "mid", "value": "1010"}, {"expression": "le", "field": "mid", "value": "1020"}},
			num("mid", func(n float64) bool { return n >= 1010 && n <= 1020 })},
		{"lt on a time string", SourceAgentInfo, []map[string]any{{"expression": "lt", "field": "createdTime", "value": testNow.Add(-3 * time.Hour).Format("2006-01-02T15:04:05")}},
			str("createdTime", func(s string) bool { return s < testNow.Add(-3*time.Hour).Format("2006-01-02T15:04:05") })},
		{"between numeric (inclusive)", SourceAgentInfo, []map[string]any{{"expression": "between", "field": "mid", "values": []string{"1050", "1100"}}},
			num("mid", func(n float64) bool { return n >= 1050 && n <= 1100 })},
		{"like with %", SourceAgentInfo, []map[string]any{{"expression": "like", "field": "hostname", "value": "web-%"}},
			str("hostname", func(s string) bool { return strings.HasPrefix(s, "web-") })},
		{"like with _", SourceAgentInfo, []map[string]any{{"expression": "like", "field": "hostname", "value": "db-zürich-_7"}},
			str("hostname", func(s string) bool { return regexp.MustCompile(`^db-zürich-.7$`).MatchString(s) })},
		{"not_like", SourceAgentInfo, []map[string]any{{"expression": "not_like", "field": "hostname", "value": "%.ec2.internal"}},
			not(str("hostname", func(s string) bool { return strings.HasSuffix(s, ".ec2.internal") }))},
		{"ilike", SourceAgentInfo, []map[string]any{{"expression": "ilike", "field": "hostname", "value": "K8S-NODE-%"}},
			str("hostname", func(s string) bool { return strings.HasPrefix(s, "k8s-node-") })},
		{"not_ilike", SourceAgentInfo, []map[string]any{{"expression": "not_ilike", "field": "mode", "value": "EBPF"}},
			not(str("mode", func(s string) bool { return s == "ebpf" }))},
		{"rlike", SourceAgentInfo, []map[string]any{{"expression": "rlike", "field": "agentVersion", "value": `^6\.[0-3]\.`}},
			str("agentVersion", regexp.MustCompile(`^6\.[0-3]\.`).MatchString)},
		{"not_rlike", SourceAgentInfo, []map[string]any{{"expression": "not_rlike", "field": "hostname", "value": "東京"}},
			not(str("hostname", func(s string) bool { return strings.Contains(s, "東京") }))},
		{"dotted map member", SourceAgentInfo, []map[string]any{{"expression": "eq", "field": "tags.env", "value": "prod"}},
			str("tags.env", func(s string) bool { return s == "prod" })},
		{"quoted member with dot and slash", SourceAgentInfo, []map[string]any{{"expression": "eq", "field": `tags."kubernetes.io\/role"`, "value": "node"}},
			func(r map[string]any) bool {
				tags, _ := r["tags"].(map[string]any)
				return tags["kubernetes.io/role"] == "node"
			}},
		{"nested object member", SourceConnections, []map[string]any{{"expression": "lt", "field": "dstEntityId.mid", "value": "1010"}},
			num("dstEntityId.mid", func(n float64) bool { return n < 1010 })},
		{"member of objects in an array", SourceConnections, []map[string]any{{"expression": "eq", "field": "endpointDetails.dst_port", "value": "5432"}},
			num("endpointDetails.dst_port", func(n float64) bool { return n == 5432 })},
		{"rlike on an array of objects", SourceConnections, []map[string]any{{"expression": "rlike", "field": "endpointDetails", "value": `"protocol":"UDP"`}},
			str("endpointDetails.protocol", func(s string) bool { return s == "UDP" })},
		{"null value", SourceChangedFiles, []map[string]any{{"expression": "ne", "field": "threatInfo", "value": "null"}},
			func(r map[string]any) bool { return r["threatInfo"] != nil }},
		{"undocumented nested field", SourceDNS, []map[string]any{{"expression": "eq", "field": "_ingest.region", "value": "eu-west-2"}},
			str("_ingest.region", func(s string) bool { return s == "eu-west-2" })},
		{"missing field: positive never holds", SourceAgentInfo, []map[string]any{{"expression": "eq", "field": "tags.nothing", "value": "x"}},
			func(map[string]any) bool { return false }},
	}
	all := map[string]map[string]json.RawMessage{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if all[c.source] == nil {
				all[c.source] = fetchAll(t, h, tok, c.source, window(c.source))
			}
			want := map[string]bool{}
			for id, raw := range all[c.source] {
				var rec map[string]any
				_ = json.Unmarshal(raw, &rec)
				if c.want(rec) {
					want[id] = true
				}
			}
			body := window(c.source)
			body["filters"] = c.filters
			got := fetchAll(t, h, tok, c.source, body)
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d (of %d)", len(got), len(want), len(all[c.source]))
			}
			for id := range got {
				if !want[id] {
					t.Fatalf("unexpected record %s", got[id])
				}
			}
			if c.name != "missing field: positive never holds" && (len(want) == 0 || len(want) == len(all[c.source])) {
				t.Fatalf("the case selects %d of %d records: it tests nothing", len(want), len(all[c.source]))
			}
		})
	}
}

// Seed: "returns" keeps only the listed top-level fields; totalRows counts
// the filtered result set.
func TestSeedReturnsAndFilteredTotalRows(t *testing.T) {
	h := start(t, func(c *Config) { c.PageSize = 50 })
	tok := h.adminToken()
	body := timeFilter(testNow.Add(-2*time.Hour), testNow)
	body["returns"] = []string{"mid", "hostname"}
	body["filters"] = []map[string]any{{"expression": "eq", "field": "status", "value": "INACTIVE"}}
	recs, pages := h.walk(pathOf(SourceAgentInfo), tok, nil, body)
	if len(pages) < 2 {
		t.Fatalf("%d pages", len(pages))
	}
	for _, p := range pages {
		if p.Paging.TotalRows != int64(len(recs)) {
			t.Fatalf("totalRows %d, walked %d", p.Paging.TotalRows, len(recs))
		}
	}
	for _, r := range recs {
		var m map[string]any
		_ = json.Unmarshal(r, &m)
		if len(m) != 2 || m["mid"] == nil || m["hostname"] == nil {
			t.Fatalf("record %s: want mid and hostname only", r)
		}
	}
}

// Seed: the operand rules and the reserved expression answer 400.
func TestSeedFilterViolationsAre400(t *testing.T) {
	h := start(t, nil)
	tok := h.adminToken()
	cases := map[string]string{
		"eq with values":              `[{"expression":"eq","field":"mid","values":["1"]}]`,
		"eq with value and values":    `[{"expression":"eq","field":"mid","value":"1","values":["1"]}]`,
		"eq without value":            `[{"expression":"eq","field":"mid"}]`,
		"in with value":               `[{"expression":"in","field":"mid","value":"1"}]`,
		"in with empty values":        `[{"expression":"in","field":"mid","values":[]}]`,
		"between with one value":      `[{"expression":"between","field":"mid","values":["1"]}]`,
		"between with three values":   `[{"expression":"between","field":"mid","values":["1","2","3"]}]`,
		"between upper equals lower":  `[{"expression":"between","field":"mid","values":["5","5"]}]`,
		"between upper below lower":   `[{"expression":"between","field":"mid","values":["10","9"]}]`,
		"between strings reversed":    `[{"expression":"between","field":"hostname","values":["b","a"]}]`,
		"between with value":          `[{"expression":"between","field":"mid","value":"1"}]`,
		"expr is reserved":            `[{"expression":"expr","field":"mid","value":"1"}]`,
		"unknown expression":          `[{"expression":"contains","field":"mid","value":"1"}]`,
		"expression in upper case":    `[{"expression":"EQ","field":"mid","value":"1"}]`,
		"value as a number":           `[{"expression":"eq","field":"mid","value":1}]`,
		"values with a number":        `[{"expression":"in","field":"mid","values":["1",2]}]`,
		"missing field":               `[{"expression":"eq","value":"1"}]`,
		"empty field":                 `[{"expression":"eq","field":"","value":"1"}]`,
		"unknown field":               `[{"expression":"eq","field":"nosuch","value":"1"}]`,
		"unterminated quoted field":   `[{"expression":"eq","field":"tags.\"a.b","value":"1"}]`,
		"field ending with a dot":     `[{"expression":"eq","field":"tags.","value":"1"}]`,
		"invalid regular expression":  `[{"expression":"rlike","field":"hostname","value":"(["}]`,
		"unknown member":              `[{"expression":"eq","field":"mid","value":"1","op":"x"}]`,
		"filters not an array":        `{"expression":"eq","field":"mid","value":"1"}`,
		"a filter that is not object": `["eq"]`,
	}
	for name, filters := range cases {
		t.Run(name, func(t *testing.T) {
			r := h.search(pathOf(SourceAgentInfo), tok, nil, `{"filters":`+filters+`}`)
			if r.status != 400 {
				t.Fatalf("%d, want 400: %.200s", r.status, r.body)
			}
			r.message(t)
		})
	}
	for _, returns := range []string{`["nosuch"]`, `"mid"`, `[1]`, `["tags.env"]`} {
		if r := h.search(pathOf(SourceAgentInfo), tok, nil, `{"returns":`+returns+`}`); r.status != 400 {
			t.Errorf("returns %s: %d", returns, r.status)
		}
	}
}
