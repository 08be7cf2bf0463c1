package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/secret"
)

// fakeAPI is a tiny handler for faults the simulator cannot make. tokens
// counts token requests; data is called for every other request.
type fakeAPI struct {
	tokens atomic.Int64
	data   func(w http.ResponseWriter, r *http.Request, n int64)
	n      atomic.Int64
	// tokenStatus, when set, answers the token endpoint with it.
	tokenStatus int
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("RateLimit-Limit", "1000")
	w.Header().Set("RateLimit-Remaining", "999")
	w.Header().Set("RateLimit-Reset", "0")
	if r.URL.Path == "/api/v2/access/tokens" {
		n := f.tokens.Add(1)
		if f.tokenStatus != 0 {
			w.WriteHeader(f.tokenStatus)
			fmt.Fprintf(w, `{"message":"key %s refused with secret %s"}`, "k", r.Header.Get("X-SVC-UAKS"))
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token":"tok-%d","expiresAt":"%s"}`, n, time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000Z"))
		return
	}
	f.data(w, r, f.n.Add(1))
}

func testClient(t *testing.T, h http.Handler, logs *bytes.Buffer) (*Client, *Metrics) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.KeyID, cfg.Secret = srv.URL, "k", secret.New("the-secret-value")
	cfg.Retry = RetryConfig{Initial: time.Millisecond, Max: 5 * time.Millisecond}
	cfg.Timeout = 2 * time.Second
	// The fake answers RateLimit-Limit 1000; a one-second period keeps
	// the budget out of the way.
	cfg.Rate = RateConfig{Limit: 1000, Period: time.Second, Reserve: 0.1}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if logs != nil {
		log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := NewClient(cfg, nil, Options{HTTPClient: srv.Client(), Logger: log, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return c, m
}

// cloudActivities is the functionality the tests spend: a core source.
const cloudActivities = "cloud_activities"

// decodeJSON takes any complete JSON document: a cut-off body or HTML is
// an error, retried like one (C5). Telling a page from other JSON is the
// pollers' page classifier's job, tested with them.
func decodeJSON(_ int, b []byte) error {
	if !json.Valid(b) {
		return errors.New("not JSON")
	}
	return nil
}

func get(c *Client, ctx context.Context, account string, org bool) (*Response, error) {
	return c.Do(ctx, Request{Method: "GET", URL: "/api/v2/CloudActivities", Account: account, OrgAccess: org,
		Functionality: cloudActivities, What: "fetch page 1 of cloud_activities/acme", Decode: decodeJSON})
}

func TestClient_C1_RenewsTheTokenOnceOn401AndRepeatsTheRequest(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		if r.Header.Get("Authorization") == "Bearer tok-1" {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"message":"token revoked"}`)
			return
		}
		fmt.Fprint(w, `{"data":[]}`)
	}
	c, m := testClient(t, f, nil)
	if _, err := get(c, t.Context(), "acme", false); err != nil {
		t.Fatal(err)
	}
	if f.tokens.Load() != 2 || f.n.Load() != 2 {
		t.Fatalf("tokens %d, data requests %d; want 2 and 2", f.tokens.Load(), f.n.Load())
	}
	if got := testutil.ToFloat64(m.tokenRenewals.WithLabelValues("core")); got != 2 {
		t.Fatalf("renewals metric = %v", got)
	}
}

// C1: a 401 after the renewal is an error of that request, not of its
// stream: it is retried with backoff like a 5xx, each time with the token
// then current, and gives up only after api.retry.max_attempts, with an
// error a retry may cure. The renewals of tokens that die unused are
// paced (C4); the second token is obtained at once.
func TestClient_C1_A401AfterRenewalIsRetriedAsAnErrorOfThatRequest(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(401)
		fmt.Fprint(w, `{"message":"no"}`)
	}
	c, m := testClient(t, f, nil)
	c.retry.MaxAttempts = 4
	_, err := get(c, t.Context(), "acme", false)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 401 || IsPermanent(err) {
		t.Fatalf("err = %v, want a 401 a retry may cure", err)
	}
	if _, permanent := PermanentReason(err); permanent {
		t.Fatalf("PermanentReason(%v) says permanent", err)
	}
	// The first 401 repeats at once (not an attempt), then 4 attempts.
	if f.n.Load() != 5 || f.tokens.Load() != 5 {
		t.Fatalf("data requests %d tokens %d, want 5 and 5", f.n.Load(), f.tokens.Load())
	}
	if got := testutil.ToFloat64(m.retries.WithLabelValues(cloudActivities, "401")); got != 4 {
		t.Fatalf("401 retries = %v, want 4", got)
	}
	if !strings.Contains(err.Error(), "fetch page 1 of cloud_activities/acme") || !strings.Contains(err.Error(), "giving up after 4 attempts") {
		t.Fatalf("error does not say what was done: %v", err)
	}
}

// C6: the edge token is configured, not renewed: its 401 is final.
func TestClient_C6_A401OnTheEdgeTokenIsPermanent(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(401)
		fmt.Fprint(w, `{"message":"bad token"}`)
	}))
	t.Cleanup(srv.Close)
	c, err := NewEdgeClient(EdgeConfig{BaseURL: srv.URL, Token: secret.New("edge-tok"), Timeout: time.Second, Rate: RateConfig{Limit: 1000, Period: time.Second}},
		DefaultConfig(), nil, Options{HTTPClient: srv.Client(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(t.Context(), Request{Method: "GET", URL: "/api/v1/audit_events", Functionality: FunctionalityEdge, What: "fetch edge", Decode: decodeJSON})
	if reason, permanent := PermanentReason(err); !permanent || reason != ReasonUnauthorized || n.Load() != 1 {
		t.Fatalf("err = %v (reason %q), %d requests; want a permanent 401 after 1 request", err, reason, n.Load())
	}
}

func TestClient_C1_ConcurrentCallersShareOneTokenRequest(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) { fmt.Fprint(w, `{"data":[]}`) }
	c, _ := testClient(t, f, nil)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := get(c, t.Context(), "acme", false); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if f.tokens.Load() != 1 {
		t.Fatalf("token requests = %d, want 1", f.tokens.Load())
	}
}

func TestClient_C2_AccountAndOrgHeaders(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%q %q %q", r.Header.Get("Account-Name"), r.Header.Get("Org-Access"), r.Header.Get("Content-Type")))
		mu.Unlock()
		fmt.Fprint(w, `{"data":[]}`)
	}
	c, _ := testClient(t, f, nil)
	for _, a := range []struct {
		acct string
		org  bool
	}{{"acme", false}, {"", false}, {"", true}} {
		if _, err := get(c, t.Context(), a.acct, a.org); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{`"acme" "" "application/json"`, `"" "" "application/json"`, `"" "true" "application/json"`}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("headers %v, want %v", seen, want)
	}
}

func TestClient_C5_RetriesServerErrorsAndCutOffBodies(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		switch n {
		case 1:
			w.WriteHeader(503)
		case 2: // declares more than it sends, then closes: cut off
			w.Header().Set("Content-Length", "100")
			fmt.Fprint(w, `{"data":[{"a":`)
		case 3: // complete HTTP, but not complete JSON
			fmt.Fprint(w, `{"data":[{"a":1}`)
		case 4:
			fmt.Fprint(w, `<html>gateway</html>`)
		default:
			fmt.Fprint(w, `{"data":[{"a":1}]}`)
		}
	}
	c, m := testClient(t, f, nil)
	if _, err := get(c, t.Context(), "acme", false); err != nil {
		t.Fatal(err)
	}
	if f.n.Load() != 5 {
		t.Fatalf("data requests = %d, want 5", f.n.Load())
	}
	if got := testutil.ToFloat64(m.retries.WithLabelValues(cloudActivities, "body")); got != 3 {
		t.Fatalf("body retries = %v, want 3", got)
	}
}

func TestClient_C5_PermanentStatusesAreNotRepeated(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 403, 404, 405, 409} {
		f := &fakeAPI{}
		f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
			w.WriteHeader(status)
			fmt.Fprint(w, `{"message":"nope"}`)
		}
		c, _ := testClient(t, f, nil)
		_, err := get(c, t.Context(), "acme", false)
		var se *StatusError
		if !IsPermanent(err) || !errors.As(err, &se) || se.Status != status || se.Message != "nope" {
			t.Errorf("status %d: err = %v", status, err)
		}
		if f.n.Load() != 1 {
			t.Errorf("status %d: %d requests, want 1", status, f.n.Load())
		}
	}
}

func TestClient_C4_A429WaitsForRateLimitReset(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		if n == 1 {
			w.Header().Set("RateLimit-Remaining", "0")
			w.Header().Set("RateLimit-Reset", "1")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"message":"slow down"}`)
			return
		}
		fmt.Fprint(w, `{"data":[]}`)
	}
	c, m := testClient(t, f, nil)
	start := time.Now()
	if _, err := get(c, t.Context(), "acme", false); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < time.Second {
		t.Fatalf("retried after %v, before RateLimit-Reset (1s)", el)
	}
	if got := testutil.ToFloat64(m.rateLimited.WithLabelValues(cloudActivities)); got != 1 {
		t.Fatalf("rate limited metric = %v", got)
	}
}

func TestClient_ContextEndsRetriesPromptly(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) { w.WriteHeader(503) }
	c, _ := testClient(t, f, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := get(c, ctx, "acme", false)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

// A credential never appears in errors or logs, even when the server echoes
// it back (C1, STYLE item 9).
func TestClient_SecretNeverInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	f := &fakeAPI{tokenStatus: 401}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {}
	c, _ := testClient(t, f, &logs)
	_, err := get(c, t.Context(), "acme", false)
	if err == nil {
		t.Fatal("no error with a refused secret")
	}
	c.log.Error("final", "err", err)
	for _, s := range []string{err.Error(), logs.String()} {
		if strings.Contains(s, "the-secret-value") {
			t.Fatalf("secret leaked: %s", s)
		}
	}
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("expected the echoed secret to be redacted: %v", err)
	}

	// The bearer token too, echoed by a failing data endpoint.
	logs.Reset()
	f2 := &fakeAPI{}
	f2.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		w.WriteHeader(503)
		fmt.Fprintf(w, `{"message":"bad %s"}`, r.Header.Get("Authorization"))
	}
	c2, _ := testClient(t, f2, &logs)
	c2.retry.MaxAttempts = 3
	_, err = get(c2, t.Context(), "acme", false)
	if err == nil || strings.Contains(err.Error(), "tok-1") || strings.Contains(logs.String(), "tok-1") {
		t.Fatalf("token leaked or no error: %v\n%s", err, logs.String())
	}
}

// The client scrubs with the process's scrubber (Options.Scrubber): a
// secret of another component (here the Kafka OAuth client secret) that a
// server echoes, in any form a request carries it, is not shown either,
// not even when the message is cut at 200 characters across it (issue 20).
func TestClient_ScrubsEverySecretOfTheProcess(t *testing.T) {
	t.Parallel()
	const other = "kafka+client/secret=="
	scr := secret.NewScrubber(secret.New(other))
	scr.AddBasic("kafka-client", secret.New(other))
	basic := base64.StdEncoding.EncodeToString([]byte("kafka-client:" + other))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		// The last secret straddles the 200th character of the message.
		msg := "form " + url.QueryEscape(other) + " basic " + basic + " key " + r.Header.Get("X-SVC-UAKS") + " "
		msg += strings.Repeat("x", 190-len(msg)) + other
		b, _ := json.Marshal(map[string]string{"message": msg})
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.KeyID, cfg.Secret = srv.URL, "k", secret.New("the-secret-value")
	cfg.Retry = RetryConfig{Initial: time.Millisecond, Max: 5 * time.Millisecond}
	var logs bytes.Buffer
	c, err := NewClient(cfg, nil, Options{HTTPClient: srv.Client(), Scrubber: scr,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = get(c, t.Context(), "acme", false)
	if err == nil {
		t.Fatal("no error from a refusing token endpoint")
	}
	t.Log(err)
	for _, form := range []string{other, url.QueryEscape(other), basic, "the-secret-value", "kafka+client"} {
		if strings.Contains(err.Error(), form) || strings.Contains(logs.String(), form) {
			t.Errorf("%q leaked: %v\n%s", form, err, logs.String())
		}
	}
	// The client's own secret joined the process's scrubber.
	if got := scr.Scrub("the-secret-value"); got != secret.Redacted {
		t.Errorf("the API secret is not in the shared scrubber: %q", got)
	}
}
