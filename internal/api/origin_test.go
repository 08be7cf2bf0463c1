package api

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api/origin"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// originClient is a core client of base with the given allow-list and
// http.Client (nil: a new one), logging at DEBUG into logs when not nil.
func originClient(t *testing.T, base string, hc *http.Client, allowed []string, logs *bytes.Buffer) (*Client, *Metrics) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.KeyID, cfg.Secret = base, "k", secret.New("the-secret-value")
	cfg.Retry = RetryConfig{Initial: time.Millisecond, Max: 5 * time.Millisecond}
	cfg.Timeout = 2 * time.Second
	cfg.Rate = RateConfig{Limit: 1000, Period: time.Second, Reserve: 0.1}
	cfg.AllowedOrigins = allowed
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	log := discardLogger()
	if logs != nil {
		log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := NewClient(cfg, nil, Options{HTTPClient: hc, Logger: log, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return c, m
}

// C1: a redirect to another port of the same IP keeps neither the token
// nor Account-Name (Go strips only Authorization, and only across
// domains): it is refused, permanently. A same-origin redirect still
// works, and an allowed origin is followed. The caller's http.Client is
// not modified, and its own redirect policy still runs.
func TestClient_C1_RedirectToAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	other := simtest.NewHeaderRecorder(t)
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		switch r.URL.Path {
		case "/moved":
			fmt.Fprint(w, `{"data":[{"a":1}]}`)
		case "/api/v2/CloudActivities":
			if r.URL.Query().Get("to") == "home" {
				http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
				return
			}
			http.Redirect(w, r, other.URL+"/api/v2/CloudActivities", http.StatusTemporaryRedirect)
		}
	}
	home := httptest.NewServer(f)
	t.Cleanup(home.Close)
	calls := 0
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { calls++; return nil }}
	own := hc.CheckRedirect
	fetch := func(c *Client, to string) error {
		_, err := c.Do(t.Context(), Request{Method: "GET", URL: "/api/v2/CloudActivities?to=" + to, Account: "acme",
			Functionality: cloudActivities, What: "fetch page 1 of cloud_activities/acme",
			Decode: decodeJSON})
		return err
	}

	var logs bytes.Buffer
	c, _ := originClient(t, home.URL, hc, nil, &logs)
	err := fetch(c, "other")
	var oe *origin.Error
	if !errors.As(err, &oe) || !oe.Redirect || !IsPermanent(err) {
		t.Fatalf("err = %v, want a permanent redirect *origin.Error", err)
	}
	if n := len(other.Seen()); n != 0 {
		t.Fatalf("the other origin got %d requests", n)
	}
	if calls != 0 {
		t.Fatalf("the caller's CheckRedirect ran for a refused redirect")
	}
	if err := fetch(c, "home"); err != nil {
		t.Fatalf("same-origin redirect: %v", err)
	}
	if calls != 1 {
		t.Fatalf("the caller's CheckRedirect ran %d times, want 1", calls)
	}
	if hc.CheckRedirect == nil || fmt.Sprintf("%p", hc.CheckRedirect) != fmt.Sprintf("%p", own) || hc.Transport != nil {
		t.Fatalf("the caller's http.Client was modified")
	}

	c2, _ := originClient(t, home.URL, hc, []string{other.URL}, nil)
	if err := fetch(c2, "other"); err != nil {
		t.Fatalf("redirect to an allowed origin: %v", err)
	}
	if hs := other.Seen(); len(hs) != 1 || !strings.HasPrefix(hs[0].Get("Authorization"), "Bearer tok-") || hs[0].Get("Account-Name") != "acme" {
		t.Fatalf("the allowed origin got %d requests: %v", len(hs), hs)
	}
}

// C1: an allowed origin on another host gets the bearer token on a
// redirect too (Go drops Authorization across hosts).
func TestClient_C1_RedirectToAnAllowedHostKeepsTheToken(t *testing.T) {
	t.Parallel()
	other := simtest.NewHeaderRecorder(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(other.URL, "http://"))
	target := "http://localhost:" + port
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		http.Redirect(w, r, target+"/api/v2/CloudActivities", http.StatusTemporaryRedirect)
	}
	home := httptest.NewServer(f)
	t.Cleanup(home.Close)
	c, _ := originClient(t, home.URL, nil, []string{target}, nil)
	if _, err := get(c, t.Context(), "acme", false); err != nil {
		t.Fatal(err)
	}
	if hs := other.Seen(); len(hs) != 1 || hs[0].Get("Authorization") != "Bearer tok-1" {
		t.Fatalf("the allowed host got %d requests: %v", len(hs), hs)
	}
}

// C1: an https API that redirects to http would send the token in clear
// text: refused, even to an allowed origin.
func TestClient_C1_RedirectFromHTTPSToHTTPIsRefused(t *testing.T) {
	t.Parallel()
	other := simtest.NewHeaderRecorder(t)
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		http.Redirect(w, r, other.URL+"/api/v2/CloudActivities", http.StatusTemporaryRedirect)
	}
	home := httptest.NewTLSServer(f)
	t.Cleanup(home.Close)
	hc := home.Client() // trusts the server's certificate
	c, _ := originClient(t, home.URL, hc, []string{other.URL}, nil)
	_, err := get(c, t.Context(), "acme", false)
	var oe *origin.Error
	if !errors.As(err, &oe) || !oe.Downgrade || !IsPermanent(err) {
		t.Fatalf("err = %v, want a permanent downgrade *origin.Error", err)
	}
	if f.n.Load() != 1 || f.tokens.Load() != 1 {
		t.Fatalf("the https server got %d data requests and %d token requests, want 1 and 1", f.n.Load(), f.tokens.Load())
	}
	if n := len(other.Seen()); n != 0 {
		t.Fatalf("the http server got %d requests", n)
	}
	if hc.CheckRedirect != nil {
		t.Fatal("the caller's http.Client was modified")
	}
}

// C1: the user info of a URL (http://u:SECRET@host) appears in no error
// and no log line: in a refused next page, in a URL that does not parse,
// in a transport error, in a server's message.
func TestClient_C1_UserInfoOfURLsNeverInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	const pw = "pw-Secret-42"
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		if r.URL.Path == "/hangup" {
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		w.WriteHeader(503)
		fmt.Fprintf(w, `{"message":"upstream http://svc:%s@db.internal:5432/x failed"}`, pw)
	}
	var logs bytes.Buffer
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, _ := originClient(t, srv.URL, nil, nil, &logs)
	c.retry.MaxAttempts = 4
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	var errs []error
	for _, u := range []string{
		"http://user:" + pw + "@127.0.0.2:1/next",          // another origin
		"http://user:" + pw + "@" + hostPort + ":bad/next", // does not parse
		"http://user:" + pw + "@" + hostPort + "/hangup",   // same origin, cut connection
		"/api/v2/CloudActivities",                          // the server echoes one
	} {
		_, err := c.Do(t.Context(), Request{Method: "GET", URL: u, NextPage: true, Account: "acme",
			Functionality: cloudActivities, What: "fetch page 2 of cloud_activities/acme"})
		if err == nil {
			t.Fatalf("%s: no error", u)
		}
		c.log.Error("poll failed", "err", err)
		errs = append(errs, err)
	}
	for _, s := range append([]string{logs.String()}, fmt.Sprint(errs)) {
		if strings.Contains(s, pw) || strings.Contains(s, "user:") || strings.Contains(s, "svc:") {
			t.Fatalf("user info shown:\n%s", s)
		}
	}
	if !strings.Contains(errs[3].Error(), "http://"+secret.Redacted+"@db.internal") {
		t.Fatalf("echoed URL not redacted as expected: %v", errs[3])
	}
}
