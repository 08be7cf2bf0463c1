package ocsf_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// simNow is the simulator's clock in these tests: its data is a pure
// function of (seed, stream, minute), so fixed windows give fixed records.
var simNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// simSource is how a client asks the simulator for one source (CONTRACT
// C3, C6) and which member is the record time.
type simSource struct {
	name      string
	path      string // core path or edge path below EdgeURL
	method    string
	timeField string
	edge      bool
	window    time.Duration // long enough for a few hundred records
	org       bool          // organization-level audit logs
}

func simSources() []simSource {
	return []simSource{
		{name: "changed_files", path: "/api/v2/Activities/ChangedFiles/search", method: http.MethodPost, timeField: "startTime", window: time.Minute},
		{name: "connections", path: "/api/v2/Activities/Connections/search", method: http.MethodPost, timeField: "startTime", window: time.Minute},
		{name: "dns", path: "/api/v2/Activities/DNSs/search", method: http.MethodPost, timeField: "createdTime", window: time.Minute},
		{name: "user_logins", path: "/api/v2/Activities/UserLogins/search", method: http.MethodPost, timeField: "createdTime", window: 5 * time.Minute},
		{name: "agent_info", path: "/api/v2/AgentInfo/search", method: http.MethodPost, timeField: "createdTime", window: 20 * time.Minute},
		{name: "audit_logs", path: "/api/v2/AuditLogs/search", method: http.MethodPost, timeField: "createdTime", window: 45 * time.Minute},
		{name: "audit_logs", path: "/api/v2/AuditLogs/search", method: http.MethodPost, timeField: "createdTime", window: 90 * time.Minute, org: true},
		{name: "cloud_activities", path: "/api/v2/CloudActivities", method: http.MethodGet, timeField: "startTime", window: time.Minute},
		{name: "edge_audit_events", path: "/api/v1/audit_events", method: http.MethodGet, timeField: "create_time", edge: true, window: 10 * time.Minute},
		{name: "edge_alerts", path: "/api/v1/alerts", method: http.MethodGet, timeField: "create_time", edge: true, window: 90 * time.Minute},
	}
}

// simEnvelopes starts a simulator with seed and returns envelopes of every
// source, fetched like a client (first page of one window per source) and
// built like a poller builds them.
func simEnvelopes(t testing.TB, seed int64) map[string][]record.Envelope {
	t.Helper()
	sim := simtest.Start(t, func(c *apisim.Config) {
		c.Seed = seed
		c.Now = func() time.Time { return simNow }
	})
	client := &http.Client{Timeout: 30 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	token := simToken(t, client, sim.URL())
	out := make(map[string][]record.Envelope)
	var b record.Builder
	for k, s := range simSources() {
		// Windows move with the seed, so the daily wave and the alerts'
		// states (updated up to six hours after creation) vary.
		end := simNow.Add(-time.Duration(1+(seed+int64(k))%8) * time.Hour).Truncate(time.Minute)
		start := end.Add(-s.window)
		raws := simFetch(t, client, sim, token, s, start, end)
		account := "acme"
		if s.org {
			account = record.OrgAccount
		}
		for _, raw := range raws {
			env, _ := b.Build(s.name, account, s.timeField, start, end, simNow, raw)
			out[s.name] = append(out[s.name], env)
		}
	}
	return out
}

func simToken(t testing.TB, client *http.Client, base string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v2/access/tokens", bytes.NewReader([]byte(`{"keyId":"sim-key"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-SVC-UAKS", "sim-secret")
	body := simDo(t, client, req)
	var tok struct{ Token string }
	if err := json.Unmarshal(body, &tok); err != nil || tok.Token == "" {
		t.Fatalf("token: %q %v", body, err)
	}
	return tok.Token
}

// simFetch returns the records of the first page of one window.
func simFetch(t testing.TB, client *http.Client, sim *apisim.Server, token string, s simSource, start, end time.Time) []json.RawMessage {
	t.Helper()
	var req *http.Request
	switch {
	case s.edge:
		q := url.Values{"start_time": {strconv.FormatInt(start.UnixMilli(), 10)}, "end_time": {strconv.FormatInt(end.UnixMilli(), 10)}}
		if s.name == "edge_alerts" {
			q.Set("status_filter", "OPEN,IN_PROGRESS,CLOSED")
		}
		req, _ = http.NewRequest(http.MethodGet, sim.EdgeURL()+s.path+"?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer sim-edge-token")
	case s.method == http.MethodGet:
		q := url.Values{"startTime": {start.Format(time.RFC3339)}, "endTime": {end.Format(time.RFC3339)}}
		req, _ = http.NewRequest(http.MethodGet, sim.URL()+s.path+"?"+q.Encode(), nil)
	default:
		body := fmt.Sprintf(`{"timeFilter":{"startTime":%q,"endTime":%q}}`, start.Format(time.RFC3339), end.Format(time.RFC3339))
		req, _ = http.NewRequest(http.MethodPost, sim.URL()+s.path, bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
	}
	if !s.edge {
		req.Header.Set("Authorization", "Bearer "+token)
		if s.org {
			req.Header.Set("Org-Access", "true")
		} else {
			req.Header.Set("Account-Name", "acme")
		}
	}
	body := simDo(t, client, req)
	var page struct {
		Data        []json.RawMessage `json:"data"`
		AuditEvents []json.RawMessage `json:"audit_events"`
		Alerts      []json.RawMessage `json:"alerts"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("%s: decode page: %v", s.name, err)
		}
	}
	return append(append(page.Data, page.AuditEvents...), page.Alerts...)
}

func simDo(t testing.TB, client *http.Client, req *http.Request) []byte {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", req.Method, req.URL, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, body)
	}
	return body
}
