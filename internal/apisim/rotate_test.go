package apisim

import (
	"net/http"
	"testing"
	"time"
)

// Rotations while the simulator runs: a key's new secret replaces the old
// one at the token endpoint (C1), tokens minted before live on until
// revoked, and a new edge token replaces the old one (C6).
func TestRotatedCredentialsReplaceTheOldOnes(t *testing.T) {
	h := start(t, nil)
	body := `{"keyId":"sim-key"}`
	tok := h.adminToken()
	if err := h.sim.SetKeySecret("sim-key", "sim-secret-2"); err != nil {
		t.Fatal(err)
	}
	if r := h.tokenReply("sim-secret", body, "application/json"); r.status != http.StatusUnauthorized {
		t.Fatalf("the old secret after a rotation: %d %s", r.status, r.body)
	}
	if r := h.tokenReply("sim-secret-2", body, "application/json"); r.status != http.StatusCreated {
		t.Fatalf("the new secret: %d %s", r.status, r.body)
	}
	window := timeFilter(testNow.Add(-2*time.Hour), testNow.Add(-time.Hour))
	if r := h.search("/api/v2/Activities/DNSs/search", tok, map[string]string{"Account-Name": "acme"}, window); r.status != http.StatusOK {
		t.Fatalf("a token minted before the rotation: %d %s", r.status, r.body)
	}
	h.sim.RevokeTokens("sim-admin")
	if r := h.search("/api/v2/Activities/DNSs/search", tok, map[string]string{"Account-Name": "acme"}, window); r.status != http.StatusUnauthorized {
		t.Fatalf("a revoked token: %d %s", r.status, r.body)
	}
	if h.sim.SetKeySecret("nope", "x") == nil || h.sim.SetKeySecret("sim-key", "") == nil || h.sim.SetEdgeToken("") == nil {
		t.Fatal("an unknown key or an empty credential was taken")
	}

	q := msq(testNow.Add(-2*time.Hour), testNow.Add(-time.Hour))
	if err := h.sim.SetEdgeToken("sim-edge-token-2"); err != nil {
		t.Fatal(err)
	}
	if r := h.edge("/api/v1/audit_events", q, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("the old edge token after a rotation: %d %s", r.status, r.body)
	}
	if r := h.edge("/api/v1/audit_events", q, map[string]string{"Authorization": "Bearer sim-edge-token-2"}); r.status != http.StatusOK {
		t.Fatalf("the new edge token: %d %s", r.status, r.body)
	}
}
