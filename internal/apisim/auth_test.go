package apisim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func (h *harness) tokenReply(secret string, body string, ct string) reply {
	hd := map[string]string{"Content-Type": ct}
	if secret != "" {
		hd["X-SVC-UAKS"] = secret
	}
	return h.do("POST", h.sim.URL()+"/api/v2/access/tokens", hd, []byte(body))
}

// C1: the token endpoint's answers.
func TestC1TokenEndpoint(t *testing.T) {
	h := start(t, nil)
	r := h.tokenReply("sim-secret", `{"keyId":"sim-key"}`, "application/json")
	if r.status != http.StatusCreated {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var out map[string]any
	r.json(t, &out)
	tok, _ := out["token"].(string)
	exp, _ := out["expiresAt"].(string)
	if tok == "" || len(out) != 2 {
		t.Fatalf("body %s: want top-level token and expiresAt only", r.body)
	}
	if want := testNow.Add(time.Hour).Format("2006-01-02T15:04:05.000Z"); exp != want {
		t.Fatalf("expiresAt %q, want %q (ISO 8601 ms UTC, default 3600 s)", exp, want)
	}
	if r.header.Get("RateLimit-Limit") != "480" || r.header.Get("RateLimit-Remaining") != "479" {
		t.Fatalf("token endpoint rate headers: %v", r.header)
	}
	cases := []struct {
		name, secret, body, ct string
		want                   int
	}{
		{"max expiry", "sim-secret", `{"keyId":"sim-key","expiryTime":86400}`, "application/json", 201},
		{"over max expiry", "sim-secret", `{"keyId":"sim-key","expiryTime":86401}`, "application/json", 400},
		{"zero expiry", "sim-secret", `{"keyId":"sim-key","expiryTime":0}`, "application/json", 400},
		{"fractional expiry", "sim-secret", `{"keyId":"sim-key","expiryTime":10.5}`, "application/json", 400},
		{"expiry as a string", "sim-secret", `{"keyId":"sim-key","expiryTime":"3600"}`, "application/json", 400},
		{"wrong secret", "nope", `{"keyId":"sim-key"}`, "application/json", 401},
		{"no secret header", "", `{"keyId":"sim-key"}`, "application/json", 401},
		{"unknown key", "sim-secret", `{"keyId":"other"}`, "application/json", 401},
		{"no keyId", "sim-secret", `{}`, "application/json", 400},
		{"unknown member", "sim-secret", `{"keyId":"sim-key","scope":"all"}`, "application/json", 400},
		{"not JSON content type", "sim-secret", `{"keyId":"sim-key"}`, "text/plain", 400},
		{"account user key", "sim-user-secret", `{"keyId":"sim-user-key"}`, "application/json", 403},
		{"account admin key", "sim-acct-secret", `{"keyId":"sim-acct-key"}`, "application/json", 201},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.tokenReply(c.secret, c.body, c.ct)
			if r.status != c.want {
				t.Fatalf("%d, want %d: %s", r.status, c.want, r.body)
			}
			if c.want >= 400 {
				r.message(t)
			}
		})
	}
	// The secret header's name is configurable.
	h2 := start(t, func(c *Config) { c.SecretHeader = "X-Other-Secret" })
	r = h2.do("POST", h2.sim.URL()+"/api/v2/access/tokens",
		map[string]string{"X-Other-Secret": "sim-secret", "Content-Type": "application/json"}, []byte(`{"keyId":"sim-key"}`))
	if r.status != 201 {
		t.Fatalf("custom secret header: %d", r.status)
	}
}

// C1: a token dies at expiresAt; requests then answer 401 and are counted.
func TestC1TokenExpiresAt401(t *testing.T) {
	h := start(t, nil)
	tok := h.token("sim-key", "sim-secret", 60)
	body := timeFilter(testNow.Add(-time.Hour), testNow)
	if r := h.search(pathOf(SourceDNS), tok, nil, body); r.status != 200 {
		t.Fatalf("fresh token: %d", r.status)
	}
	h.clock.Advance(59 * time.Second)
	if r := h.search(pathOf(SourceDNS), tok, nil, body); r.status != 200 {
		t.Fatalf("before expiresAt: %d", r.status)
	}
	h.clock.Advance(time.Second)
	r := h.search(pathOf(SourceDNS), tok, nil, body)
	if r.status != http.StatusUnauthorized {
		t.Fatalf("at expiresAt: %d", r.status)
	}
	r.message(t)
	for _, bad := range []map[string]string{
		{"Authorization": "Bearer garbage"},
		{"Authorization": "Basic c2ltOnNpbQ=="},
		{"Authorization": ""},
	} {
		hd := map[string]string{"Content-Type": "application/json"}
		for k, v := range bad {
			hd[k] = v
		}
		if r := h.do("POST", h.sim.URL()+pathOf(SourceDNS), hd, []byte(`{}`)); r.status != 401 {
			t.Fatalf("%v: %d", bad, r.status)
		}
	}
	st := h.sim.Stats()
	if got := st.Get("sim-admin", SourceDNS).Unauthorized; got != 1 {
		t.Fatalf("sim-admin 401s = %d, want 1", got)
	}
	if got := st.Get("", SourceDNS).Unauthorized; got != 3 {
		t.Fatalf("unattributed 401s = %d, want 3", got)
	}
}

// C1: revoke_every N kills every token of the user at the N-th data
// request (401); a new token works, the old one stays dead.
func TestC1RevokedTokensGet401(t *testing.T) {
	h := start(t, func(c *Config) { c.RevokeEvery = 3 })
	tok := h.adminToken()
	body := timeFilter(testNow.Add(-time.Hour), testNow)
	for i, want := range []int{200, 200, 401, 401} {
		if r := h.search(pathOf(SourceDNS), tok, nil, body); r.status != want {
			t.Fatalf("request %d: %d, want %d", i+1, r.status, want)
		}
	}
	tok2 := h.adminToken()
	if r := h.search(pathOf(SourceDNS), tok2, nil, body); r.status != 200 {
		t.Fatalf("new token: %d", r.status)
	}
	if r := h.search(pathOf(SourceDNS), tok, nil, body); r.status != 401 {
		t.Fatalf("old token after a new one: %d", r.status)
	}
	if c := h.sim.Stats().Get("sim-admin", SourceDNS); c.Revocations != 1 || c.Unauthorized != 3 {
		t.Fatalf("revocations %d, 401s %d; want 1 and 3 (C8: a dead token's 401 revokes nothing)", c.Revocations, c.Unauthorized)
	}
}

// C2: Account-Name and Org-Access select the data; the checks answer 400 or 403.
func TestC2AccountSelection(t *testing.T) {
	h := start(t, nil)
	tok := h.adminToken()
	acct := h.token("sim-acct-key", "sim-acct-secret", 0) // account admin of acme-dev
	body := timeFilter(testNow.Add(-2*time.Hour), testNow)
	accountOf := func(r reply) string {
		t.Helper()
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var p page
		r.json(t, &p)
		var rec struct{ AccountName string }
		_ = json.Unmarshal(p.Data[0], &rec)
		return rec.AccountName
	}
	if got := accountOf(h.search(pathOf(SourceAuditLogs), tok, nil, body)); got != "acme" {
		t.Fatalf("no header: account %q, want the token's home acme", got)
	}
	if got := accountOf(h.search(pathOf(SourceAuditLogs), tok, map[string]string{"Account-Name": "ACME-DEV"}, body)); got != "acme-dev" {
		t.Fatalf("Account-Name ACME-DEV: account %q", got)
	}
	org := map[string]string{"Org-Access": "TRUE", "Account-Name": "nonexistent"}
	if got := accountOf(h.search(pathOf(SourceAuditLogs), tok, org, body)); got != "ORG" {
		t.Fatalf("Org-Access: account %q, want organization-level data", got)
	}
	cases := []struct {
		name    string
		tok     string
		path    string
		headers map[string]string
		want    int
	}{
		{"unknown account", tok, pathOf(SourceDNS), map[string]string{"Account-Name": "globex"}, 403},
		{"Org-Access on a search that has no org data", tok, pathOf(SourceDNS), map[string]string{"Org-Access": "true"}, 400},
		{"Org-Access false is ignored", tok, pathOf(SourceDNS), map[string]string{"Org-Access": "false"}, 200},
		{"account admin reads its account", acct, pathOf(SourceDNS), nil, 200},
		{"account admin reads another account", acct, pathOf(SourceDNS), map[string]string{"Account-Name": "acme"}, 403},
		{"account admin reads org data", acct, pathOf(SourceAuditLogs), map[string]string{"Org-Access": "true"}, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.search(c.path, c.tok, c.headers, body)
			if r.status != c.want {
				t.Fatalf("%d, want %d: %.200s", r.status, c.want, r.body)
			}
		})
	}
	// Org-Access on GET CloudActivities is refused too.
	if r := h.get(h.sim.URL()+pathOf(SourceCloudActivities), tok, map[string]string{"Org-Access": "true"}); r.status != 400 {
		t.Fatalf("CloudActivities with Org-Access: %d", r.status)
	}
	// C2/C3: a next page needs the first page's account headers.
	r := h.search(pathOf(SourceDNS), tok, map[string]string{"Account-Name": "acme-dev"}, body)
	var p page
	r.json(t, &p)
	if r := h.get(p.Paging.URLs.NextPage, tok, nil); r.status != 400 {
		t.Fatalf("next page without Account-Name: %d", r.status)
	}
	if r := h.get(p.Paging.URLs.NextPage, tok, map[string]string{"Account-Name": "Acme-Dev"}); r.status != 200 {
		t.Fatalf("next page with Account-Name: %d %s", r.status, r.body)
	}
	// Another user cannot follow the chain.
	if r := h.get(p.Paging.URLs.NextPage, acct, nil); r.status != 404 {
		t.Fatalf("next page of another user: %d", r.status)
	}
}

// C2, C5: a key whose permissions are narrower than its role (allowed
// accounts, no organization-level access) gets 403 for the rest, on first
// and next pages alike; what it may read it reads as before.
func TestC2PermissionLimitedKeyGets403ForTheRest(t *testing.T) {
	h := start(t, func(c *Config) {
		c.Accounts = []string{"acme", "acme-dev", "acme-ops"}
		c.Keys = append(c.Keys, KeyConfig{KeyID: "narrow", Secret: "narrow-secret", User: "narrow-user", Role: RoleOrgAdmin,
			Account: "acme", AllowedAccounts: []string{"acme", "ACME-OPS"}, NoOrgAccess: true})
	})
	tok := h.token("narrow", "narrow-secret", 0)
	body := timeFilter(testNow.Add(-2*time.Hour), testNow)
	cases := []struct {
		name    string
		path    string
		headers map[string]string
		want    int
	}{
		{"its home account", pathOf(SourceDNS), nil, 200},
		{"an allowed account", pathOf(SourceDNS), map[string]string{"Account-Name": "acme-ops"}, 200},
		{"an account it may not read", pathOf(SourceDNS), map[string]string{"Account-Name": "acme-dev"}, 403},
		{"organization-level audit logs", pathOf(SourceAuditLogs), map[string]string{"Org-Access": "true"}, 403},
		{"audit logs of an allowed account", pathOf(SourceAuditLogs), map[string]string{"Account-Name": "acme"}, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.search(c.path, tok, c.headers, body)
			if r.status != c.want {
				t.Fatalf("%d, want %d: %.200s", r.status, c.want, r.body)
			}
			if c.want == 403 {
				r.message(t)
			}
		})
	}
	// An unlimited org admin still reads every account and org data.
	if r := h.search(pathOf(SourceAuditLogs), h.adminToken(), map[string]string{"Org-Access": "true"}, body); r.status != 200 {
		t.Fatalf("org admin, org data: %d", r.status)
	}
	bad := DefaultConfig()
	bad.Keys[0].AllowedAccounts = []string{"globex"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "keys[0].allowed_accounts") {
		t.Fatalf("unknown allowed account: %v", err)
	}
}

// Seed "Errors": unknown paths 404, wrong methods 405, both with {"message"}.
func TestRoutingErrors(t *testing.T) {
	h := start(t, nil)
	tok := h.adminToken()
	cases := []struct {
		method, path string
		want         int
	}{
		{"GET", "/api/v2/Nothing", 404},
		{"POST", "/api/v2/activities/dnss/search", 404}, // paths are case-sensitive
		{"GET", pathOf(SourceDNS), 405},
		{"POST", pathOf(SourceCloudActivities), 405},
		{"GET", "/api/v2/access/tokens", 405},
		{"POST", pathOf(SourceDNS) + "/pages/x", 405},
		{"POST", "/edge/api/v1/alerts", 405},
		{"GET", "/edge/api/v1/nothing", 404},
		{"POST", "/_truth", 405},
	}
	for _, c := range cases {
		r := h.do(c.method, h.sim.URL()+c.path, map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}, []byte(`{}`))
		if r.status != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, r.status, c.want)
			continue
		}
		if msg := r.message(t); msg == "" {
			t.Errorf("%s %s: empty message", c.method, c.path)
		}
		if c.want == 405 && r.header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", c.method, c.path)
		}
	}
	if !strings.HasSuffix(h.sim.EdgeURL(), "/edge") || !strings.HasPrefix(h.sim.EdgeURL(), h.sim.URL()) {
		t.Fatalf("EdgeURL %q", h.sim.EdgeURL())
	}
}
