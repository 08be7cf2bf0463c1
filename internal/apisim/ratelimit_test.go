package apisim

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func rateHeaders(t testing.TB, r reply) (limit, remaining, reset int) {
	t.Helper()
	var err error
	vals := make([]int, 3)
	for i, k := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		if vals[i], err = strconv.Atoi(r.header.Get(k)); err != nil {
			t.Fatalf("%s = %q (status %d)", k, r.header.Get(k), r.status)
		}
	}
	return vals[0], vals[1], vals[2]
}

// C4: a bucket of 60 tokens refilled over 5 s: 60 requests pass with
// Remaining counting down, the 61st gets 429 with Reset, and the bucket
// refills at one token per 5/60 s. Errors after authentication spend tokens.
func TestC4DrainedBucketGives429AndRefills(t *testing.T) {
	h := start(t, func(c *Config) { c.RateLimit = 60; c.RatePeriod = 5 * time.Second })
	tok := h.adminToken()
	body := timeFilter(testNow.Add(-10*time.Minute), testNow)
	for i := 0; i < 60; i++ {
		b := any(body)
		if i == 7 {
			b = `{"bad":1}` // a 400 spends a token too
		}
		r := h.search(pathOf(SourceUserLogins), tok, nil, b)
		limit, remaining, reset := rateHeaders(t, r)
		if limit != 60 || remaining != 59-i {
			t.Fatalf("request %d (%d): limit %d remaining %d", i, r.status, limit, remaining)
		}
		if (remaining == 0) != (reset > 0) {
			t.Fatalf("request %d: remaining %d reset %d", i, remaining, reset)
		}
	}
	r := h.search(pathOf(SourceUserLogins), tok, nil, body)
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("61st request: %d", r.status)
	}
	r.message(t)
	if limit, remaining, reset := rateHeaders(t, r); limit != 60 || remaining != 0 || reset != 1 {
		t.Fatalf("429 headers: %d %d %d (reset: 5/60 s rounded up is 1)", limit, remaining, reset)
	}
	h.clock.Advance(5 * time.Second / 60)
	if r := h.search(pathOf(SourceUserLogins), tok, nil, body); r.status != 200 {
		t.Fatalf("after one refill interval: %d", r.status)
	}
	if r := h.search(pathOf(SourceUserLogins), tok, nil, body); r.status != 429 {
		t.Fatalf("one token refilled, two spent: %d", r.status)
	}
	h.clock.Advance(time.Minute)
	if _, remaining, _ := rateHeaders(t, h.search(pathOf(SourceUserLogins), tok, nil, body)); remaining != 59 {
		t.Fatalf("refilled bucket: remaining %d, want 59 (capped at the limit)", remaining)
	}
	if got := h.sim.Stats().Get("sim-admin", SourceUserLogins); got.RateLimited != 2 || got.Requests != 64 {
		t.Fatalf("stats %+v", got)
	}
}

// C2, C4: sub-accounts of one user share a bucket; each source, the token
// endpoint and next-page GETs spend the bucket of their functionality.
func TestC4BucketsPerUserAndFunctionality(t *testing.T) {
	h := start(t, func(c *Config) { c.RateLimit = 60; c.RatePeriod = 5 * time.Second })
	tok := h.adminToken() // token bucket: 59 left
	body := timeFilter(testNow.Add(-time.Hour), testNow)
	remaining := func(r reply) int { _, rem, _ := rateHeaders(t, r); return rem }
	if got := remaining(h.search(pathOf(SourceDNS), tok, map[string]string{"Account-Name": "acme"}, body)); got != 59 {
		t.Fatalf("first dns request: %d", got)
	}
	r := h.search(pathOf(SourceDNS), tok, map[string]string{"Account-Name": "acme-dev"}, body)
	if got := remaining(r); got != 58 {
		t.Fatalf("dns of the other sub-account: %d, want 58 (shared bucket)", got)
	}
	var p page
	r.json(t, &p)
	if got := remaining(h.get(p.Paging.URLs.NextPage, tok, map[string]string{"Account-Name": "acme-dev"})); got != 57 {
		t.Fatalf("next-page GET: %d, want 57 (same bucket as its search)", got)
	}
	if got := remaining(h.search(pathOf(SourceUserLogins), tok, nil, body)); got != 59 {
		t.Fatalf("another source: %d, want 59 (own bucket)", got)
	}
	tr := h.tokenReply("sim-secret", `{"keyId":"sim-key"}`, "application/json")
	if got := remaining(tr); got != 58 {
		t.Fatalf("token endpoint: %d, want 58 (its own bucket)", got)
	}
	if got := remaining(h.search(pathOf(SourceDNS), tok, nil, body)); got != 56 {
		t.Fatalf("dns after the token request: %d, want 56", got)
	}
	// Another user has buckets of its own.
	acct := h.token("sim-acct-key", "sim-acct-secret", 0)
	if got := remaining(h.search(pathOf(SourceDNS), acct, nil, body)); got != 59 {
		t.Fatalf("another user: %d", got)
	}
	// The token endpoint's bucket drains to 429 like the others.
	for i := 0; i < 58; i++ {
		h.tokenReply("sim-secret", `{"keyId":"sim-key"}`, "application/json")
	}
	if r := h.tokenReply("sim-secret", `{"keyId":"sim-key"}`, "application/json"); r.status != 429 {
		t.Fatalf("drained token bucket: %d", r.status)
	}
}

// C4: the noisy neighbour spends its fraction of each data bucket's refill
// continuously, so Remaining falls between our requests.
func TestC4NoisyNeighbourSpendsTheSharedBucket(t *testing.T) {
	h := start(t, func(c *Config) { c.RateLimit = 60; c.RatePeriod = 5 * time.Second; c.NoisyFraction = 0.5 })
	tok := h.adminToken()
	body := timeFilter(testNow.Add(-time.Hour), testNow)
	for i := 0; i < 60; i++ { // drain
		h.search(pathOf(SourceDNS), tok, nil, body)
	}
	if r := h.search(pathOf(SourceDNS), tok, nil, body); r.status != 429 {
		t.Fatalf("drained: %d", r.status)
	}
	h.clock.Advance(5 * time.Second) // refills 60, the neighbour spends 30
	deadline := time.Now().Add(10 * time.Second)
	for h.sim.Stats().Get("sim-admin", SourceDNS).NoisyTokens < 30 {
		if time.Now().After(deadline) {
			t.Fatalf("the neighbour spent %d tokens, want 30", h.sim.Stats().Get("sim-admin", SourceDNS).NoisyTokens)
		}
		time.Sleep(20 * time.Millisecond) // the neighbour runs on its own ticker
	}
	_, rem, _ := rateHeaders(t, h.search(pathOf(SourceDNS), tok, nil, body))
	if rem != 29 {
		t.Fatalf("remaining %d, want 29 (60 refilled - 30 spent by the neighbour - 1)", rem)
	}
}
