package record_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
)

// goldenPath is the file that pins the ids of ordinary records. It was
// written by this test with the canonicalizer as it was before the
// collision fixes (see golden_ids.txt's header); every later change of
// record.ID must leave it byte for byte the same.
const goldenPath = "testdata/golden_ids.txt"

// goldenUpdateEnv, set to 1, makes TestGoldenIDsOfOrdinaryRecordsNeverChange
// rewrite the golden file instead of comparing. Do that only when the
// simulator's data changed, never to "fix" a changed id (CONTRACT C7: an id
// is a promise to every sink that already stored it).
const goldenUpdateEnv = "RECORD_UPDATE_GOLDEN"

// goldenWindow is a window of one stream whose records the golden file pins.
type goldenWindow struct {
	source, account string
	start           time.Time
	length          time.Duration
}

// goldenNow is the simulator's clock; every window of goldenWindows lies
// well before it, so late data and alert updates are settled.
func goldenNow() time.Time { return time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC) }

// goldenWindows picks, for every source the simulator serves, a window in
// the past holding a few thousand records at the default rates.
func goldenWindows() []goldenWindow {
	return []goldenWindow{
		{apisim.SourceChangedFiles, "acme", time.Date(2026, 11, 18, 9, 0, 0, 0, time.UTC), 9 * time.Minute},
		{apisim.SourceConnections, "acme", time.Date(2026, 11, 18, 9, 0, 0, 0, time.UTC), 6 * time.Minute},
		{apisim.SourceDNS, "acme", time.Date(2026, 11, 18, 9, 0, 0, 0, time.UTC), 12 * time.Minute},
		{apisim.SourceUserLogins, "acme-dev", time.Date(2026, 11, 18, 3, 0, 0, 0, time.UTC), 90 * time.Minute},
		{apisim.SourceAgentInfo, "acme", time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC), 6 * time.Hour},
		{apisim.SourceAuditLogs, "acme", time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC), 15 * time.Hour},
		{apisim.SourceAuditLogs, apisim.OrgAccount, time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC), 15 * time.Hour},
		{apisim.SourceCloudActivities, "acme", time.Date(2026, 11, 18, 9, 0, 0, 0, time.UTC), 18 * time.Minute},
		{apisim.SourceEdgeAuditEvents, "acme", time.Date(2026, 11, 18, 6, 0, 0, 0, time.UTC), 3 * time.Hour},
		{apisim.SourceEdgeAlerts, "acme", time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC), 30 * time.Hour},
	}
}

// goldenRecords returns hand-written records of the shapes the simulator does
// not serve: every number form of RFC 8785's test vectors that a producer
// writes in its shortest form, escapes, characters above U+FFFF, nesting.
func goldenRecords() []struct{ source, raw string } {
	return []struct{ source, raw string }{
		{"dns", `{"n":0}`},
		{"dns", `{"n":-0}`},
		{"dns", `{"n":-0.0}`},
		{"dns", `{"n":1e21}`},
		{"dns", `{"n":1E21}`},
		{"dns", `{"n":1e+21}`},
		{"dns", `{"n":1000000000000000000000}`},
		{"dns", `{"n":1.5e-7}`},
		{"dns", `{"n":0.00000015}`},
		{"dns", `{"n":9007199254740992}`},
		{"dns", `{"n":-9007199254740992}`},
		{"dns", `{"n":0.1}`},
		{"dns", `{"n":0.10}`},
		{"dns", `{"n":19.90}`},
		{"dns", `{"n":4.50}`},
		{"dns", `{"n":2e-3}`},
		{"dns", `{"n":1E30}`},
		{"dns", `{"n":0.000001}`},
		{"dns", `{"n":1e-7}`},
		{"dns", `{"n":-12.5e-3}`},
		{"dns", `{"n":1.0}`},
		{"dns", `{"n":123456789012345}`},
		{"dns", `{"n":1234567890123456}`},
		{"dns", `{"n":5e-324}`},
		{"dns", `{"n":1.7976931348623157e308}`},
		{"dns", `{"n":1e23}`},
		{"dns", `{"n":333333333.3333333}`},
		{"dns", `{"n":1795168800123}`},
		{"dns", `{"numbers":[0,-0,1,-1,0.5,1e21,1e-6,1e-7,123.456,-1.5e300,9007199254740991]}`},
		{"dns", `{"s":"\u00e9\/\"\\\n\t\r\b\f\u001f\u007f\u2028 plain"}`},
		{"dns", `{"s":"é"}`},
		{"dns", `{"s":"\u00E9"}`},
		{"dns", `{"s":"\ud83d\ude00"}`},
		{"dns", `{"s":"\uD83D\uDE00"}`},
		{"dns", `{"s":"😀 𝄞 \ud834\udd1e"}`},
		{"dns", `{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7,"😀a":8,"":9}`},
		{"dns", `{"a":{"b":{"c":{"d":[1,[2,[3,{"e":null}]]]}}},"z":[],"y":{},"x":[true,false,null]}`},
		{"dns", "{ \"b\" : [ 1 , 2 ] ,\n\t\"a\" : { \"d\" : \"x\" , \"c\" : \"y\" } }\r\n"},
		{"dns", `[]`},
		{"dns", `"just a string"`},
		{"dns", `{"createdTime":"2026-11-20T10:00:00.123Z","mid":12345,"fqdn":"host-17.example.com","hostIpAddr":"10.1.2.3","ttl":300,"dnsServerIp":"10.0.0.2","tags":{"env":"prod","owner":"José Müller"},"extra":[1,2,3]}`},
		{"edge_alerts", `{"uuid":"6c1b9a","create_time":1795168800123,"severity":3,"related_entities":[{"type":"host","id":"h-1"},{"id":"u-2","type":"user"}],"description":"Suspicious login \u2014 \"admin\" from 203.0.113.7","score":0.875}`},
		{"connections", `{"startTime":"2026-11-20T10:00:00Z","dstInBytes":18446744073709552000,"srcOutBytes":4294967296,"ratio":0.333,"endpointDetails":{"port":443,"proto":"tcp"}}`},
	}
}

// C7: the id of every ordinary record stays what it was when these ids were
// first stored: records of all nine sources as the simulator serves them
// (keys in the seed's order, \u escapes) and hand-written records of every
// number, escape and nesting shape, against the golden file.
func TestGoldenIDsOfOrdinaryRecordsNeverChange(t *testing.T) {
	got := goldenText(t)
	if os.Getenv(goldenUpdateEnv) == "1" {
		if err := os.MkdirAll(filepath.Dir(goldenPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", goldenPath)
		return
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d:\n got  %s\n want %s", i+1, g, w)
			}
		}
		t.Fatalf("ids differ from %s: an ordinary record's id changed", goldenPath)
	}
}

// goldenText computes the golden file's content with the code under test.
func goldenText(t *testing.T) []byte {
	t.Helper()
	cfg := apisim.DefaultConfig()
	cfg.Now = func() time.Time { return goldenNow() }
	sim, err := apisim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		_ = sim.Close()
		t.Fatal(err)
	}
	tr := &http.Transport{}
	c := &simClient{t: t, sim: sim, http: &http.Client{Transport: tr, Timeout: time.Minute}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := sim.Close(); err != nil {
			t.Error(err)
		}
	})
	c.token = c.adminToken()

	var out bytes.Buffer
	out.WriteString("# Record ids of CONTRACT C7, pinned by TestGoldenIDsOfOrdinaryRecordsNeverChange\n")
	out.WriteString("# (written with the canonicalizer of commit 5a8654b, before the collision fixes).\n")
	out.WriteString("# sim <source> <account> <window start> <window end> <count> <XOR of record.ID of the served records>\n")
	var h record.Hasher
	for _, w := range goldenWindows() {
		end := w.start.Add(w.length)
		recs := c.fetch(w.source, w.account, w.start, end)
		var d record.Digest
		for _, raw := range recs {
			id, err := record.ID(w.source, raw)
			if err != nil {
				t.Fatalf("%s record.ID: %v\n%s", w.source, err, raw)
			}
			if hid, err := h.ID(w.source, raw); err != nil || hid != id {
				t.Fatalf("%s Hasher.ID %s, %v; record.ID %s", w.source, hid, err, id)
			}
			if err := d.Add(id); err != nil {
				t.Fatal(err)
			}
		}
		// The simulator's truth hashes its own canonical form with
		// IDOfCanonical, independently of the canonicalizer under test.
		if n, x := sim.Truth(w.source, w.account, w.start, end); n != d.Count || x != d.Hex() {
			t.Errorf("%s/%s: served %d records with XOR %s, truth %d %s", w.source, w.account, d.Count, d.Hex(), n, x)
		}
		if d.Count < 1000 {
			t.Errorf("%s/%s: only %d records; widen its window", w.source, w.account, d.Count)
		}
		fmt.Fprintf(&out, "sim %s %s %s %s %d %s\n", w.source, w.account,
			w.start.Format(time.RFC3339), end.Format(time.RFC3339), d.Count, d.Hex())
	}
	out.WriteString("# rec <source> <record.ID> <record as hashed, Go-quoted>\n")
	for _, r := range goldenRecords() {
		id, err := record.ID(r.source, []byte(r.raw))
		if err != nil {
			t.Fatalf("record.ID(%q): %v", r.raw, err)
		}
		fmt.Fprintf(&out, "rec %s %s %q\n", r.source, id, r.raw)
	}
	return out.Bytes()
}

// simClient fetches whole windows from the simulator as the collector's
// pollers would, without importing them.
type simClient struct {
	t     *testing.T
	sim   *apisim.Server
	http  *http.Client
	token string
}

func (c *simClient) do(method, u string, hd map[string]string, body []byte) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hd {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read %s %s: %v", method, u, err)
	}
	return resp.StatusCode, b
}

func (c *simClient) adminToken() string {
	c.t.Helper()
	st, b := c.do("POST", c.sim.URL()+"/api/v2/access/tokens",
		map[string]string{"X-SVC-UAKS": "sim-secret", "Content-Type": "application/json"}, []byte(`{"keyId":"sim-key"}`))
	var out struct {
		Token string `json:"token"`
	}
	if st != http.StatusCreated || json.Unmarshal(b, &out) != nil {
		c.t.Fatalf("token: %d %s", st, b)
	}
	return out.Token
}

// searchPath returns a core source's endpoint (CONTRACT C3).
func searchPath(source string) string {
	return map[string]string{
		apisim.SourceChangedFiles:    "/api/v2/Activities/ChangedFiles/search",
		apisim.SourceConnections:     "/api/v2/Activities/Connections/search",
		apisim.SourceDNS:             "/api/v2/Activities/DNSs/search",
		apisim.SourceUserLogins:      "/api/v2/Activities/UserLogins/search",
		apisim.SourceAgentInfo:       "/api/v2/AgentInfo/search",
		apisim.SourceAuditLogs:       "/api/v2/AuditLogs/search",
		apisim.SourceCloudActivities: "/api/v2/CloudActivities",
	}[source]
}

// fetch returns every record of (source, account) in [start, end) as
// served, following next-page links.
func (c *simClient) fetch(source, account string, start, end time.Time) []json.RawMessage {
	c.t.Helper()
	const layout = "2006-01-02T15:04:05.000Z"
	switch source {
	case apisim.SourceEdgeAuditEvents, apisim.SourceEdgeAlerts:
		q := url.Values{}
		q.Set("start_time", fmt.Sprint(start.UnixMilli()))
		q.Set("end_time", fmt.Sprint(end.UnixMilli()))
		path := "/api/v1/audit_events"
		if source == apisim.SourceEdgeAlerts {
			path = "/api/v1/alerts"
			q.Set("status_filter", "OPEN,IN_PROGRESS,CLOSED")
		}
		st, b := c.do("GET", c.sim.EdgeURL()+path+"?"+q.Encode(),
			map[string]string{"Authorization": "Bearer sim-edge-token", "Account-Name": account}, nil)
		var r struct {
			AuditEvents []json.RawMessage `json:"audit_events"`
			Alerts      []json.RawMessage `json:"alerts"`
		}
		if st != http.StatusOK || json.Unmarshal(b, &r) != nil {
			c.t.Fatalf("%s: %d %.300s", source, st, b)
		}
		// C6: the edge API has no account selection; keep the
		// account's records (account_name), as the truth counts them.
		var out []json.RawMessage
		for _, raw := range append(r.AuditEvents, r.Alerts...) {
			var x struct {
				AccountName string `json:"account_name"`
			}
			if json.Unmarshal(raw, &x) == nil && x.AccountName == account {
				out = append(out, raw)
			}
		}
		return out
	}
	hd := map[string]string{"Authorization": "Bearer " + c.token, "Account-Name": account}
	if account == apisim.OrgAccount {
		hd = map[string]string{"Authorization": "Bearer " + c.token, "Org-Access": "true"}
	}
	var st int
	var b []byte
	if source == apisim.SourceCloudActivities {
		st, b = c.do("GET", fmt.Sprintf("%s%s?startTime=%s&endTime=%s", c.sim.URL(), searchPath(source),
			start.Format(layout), end.Format(layout)), hd, nil)
	} else {
		hd["Content-Type"] = "application/json"
		body := fmt.Sprintf(`{"timeFilter":{"startTime":%q,"endTime":%q}}`, start.Format(layout), end.Format(layout))
		st, b = c.do("POST", c.sim.URL()+searchPath(source), hd, []byte(body))
		delete(hd, "Content-Type")
	}
	var recs []json.RawMessage
	for {
		if st == http.StatusNoContent {
			return recs
		}
		var p struct {
			Paging *struct {
				URLs struct {
					NextPage string `json:"nextPage"`
				} `json:"urls"`
			} `json:"paging"`
			Data []json.RawMessage `json:"data"`
		}
		if st != http.StatusOK || json.Unmarshal(b, &p) != nil {
			c.t.Fatalf("%s page %d: %d %.300s", source, len(recs), st, b)
		}
		recs = append(recs, p.Data...)
		if p.Paging == nil || p.Paging.URLs.NextPage == "" {
			return recs
		}
		st, b = c.do("GET", p.Paging.URLs.NextPage, hd, nil)
	}
}
