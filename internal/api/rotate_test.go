package api

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/secret"
)

// lockedBuffer is a log destination for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// writeSecret writes v, with the trailing newline editors add, to path.
func writeSecret(t *testing.T, path, v string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fileClient is a core client of base with the key sim-key whose secret
// is in the file path, the shared scrubber scr and logs into logs.
func fileClient(t *testing.T, base, path string, scr *secret.Scrubber, logs io.Writer) *Client {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BaseURL, cfg.KeyID, cfg.SecretFile = base, "sim-key", path
	cfg.Retry = RetryConfig{Initial: time.Millisecond, Max: 20 * time.Millisecond}
	cfg.Timeout = 10 * time.Second
	cfg.Rate = RateConfig{Limit: 10_000_000, Period: time.Hour, Reserve: 0.1}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(cfg, nil, Options{Logger: slogTo(logs), Metrics: m, Scrubber: scr})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Issue 29 item 8: api.secret_file is read again at every token renewal,
// so that rotating the file is enough. Against the simulator, whose key is
// rotated and its tokens revoked mid-run: rotated in the file first, the
// client goes on without an error; rotated on the platform first, requests
// fail while the file holds the old secret, and work again, without a
// restart, once the file is rewritten. The process's scrubber learns each
// secret read and keeps the ones before.
func TestClient_C1_ARotatedSecretFileIsUsedWithoutARestart(t *testing.T) {
	t.Parallel()
	srv := startRevokingSim(t, 0, nil)
	path := filepath.Join(t.TempDir(), "api-secret")
	writeSecret(t, path, "sim-secret")
	scr := secret.NewScrubber()
	var logs lockedBuffer
	c := fileClient(t, srv.URL(), path, scr, &logs)
	ctx := t.Context()
	if err := cloudWindow(ctx, c, 0); err != nil {
		t.Fatal(err)
	}

	// The file first, then the platform: no request fails.
	const second = `rotated/secret+2&é"x`
	writeSecret(t, path, second)
	if err := srv.SetKeySecret("sim-key", second); err != nil {
		t.Fatal(err)
	}
	srv.RevokeTokens("sim-admin")
	for i := 1; i <= 3; i++ {
		if err := cloudWindow(ctx, c, i); err != nil {
			t.Fatalf("after rotating the file, then the key: %v", err)
		}
	}
	if n := srv.Stats().Get("sim-admin", FunctionalityToken).Unauthorized; n != 0 {
		t.Fatalf("the token endpoint refused %d secrets", n)
	}

	// The platform first: the file's old secret is refused, for good,
	// until the file is rewritten; then the next request works.
	const third = "third-secret-0123456789"
	if err := srv.SetKeySecret("sim-key", third); err != nil {
		t.Fatal(err)
	}
	srv.RevokeTokens("sim-admin")
	err := cloudWindow(ctx, c, 4)
	if reason, permanent := PermanentReason(err); !permanent || reason != ReasonUnauthorized {
		t.Fatalf("the key rotated, the file not yet: %v (permanent %v, reason %q), want the token endpoint's 401", err, permanent, reason)
	}
	writeSecret(t, path, third)
	if err := cloudWindow(ctx, c, 5); err != nil {
		t.Fatalf("after rewriting the file: %v", err)
	}

	for _, s := range []string{"sim-secret", second, third, url.QueryEscape(second), base64.StdEncoding.EncodeToString([]byte(third))} {
		if got := scr.Scrub("say " + s + " end"); got != "say "+secret.Redacted+" end" {
			t.Errorf("the scrubber does not know %q: %q", s, got)
		}
	}
	if l := logs.String(); strings.Contains(l, second) || strings.Contains(l, third) {
		t.Errorf("a secret in the logs:\n%s", l)
	}
}

// echoingProxy is a proxy in front of srv that, when the token endpoint
// refuses a secret, puts it in the message, HTML-escaped, URL-escaped and
// base64-encoded (issue 29 item 9), and runs before, when set, before it
// forwards a token request.
func echoingProxy(t *testing.T, srv *apisim.Server, before *atomic.Pointer[func()]) *httptest.Server {
	t.Helper()
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/access/tokens" {
			srv.Handler().ServeHTTP(w, r)
			return
		}
		if f := before.Swap(nil); f != nil {
			(*f)()
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, r)
		if rec.Code != http.StatusUnauthorized {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		sent := r.Header.Get("X-SVC-UAKS")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"message":"wrong secret <b>%s</b> (%s, %s)"}`,
			html.EscapeString(sent), url.QueryEscape(sent), base64.StdEncoding.EncodeToString([]byte("X-SVC-UAKS: "+sent)))
	}))
	t.Cleanup(p.Close)
	return p
}

// A secret read anew from the file is scrubbed from the errors and logs
// of a token endpoint that echoes it: the scrubber learns it when it is
// read, not only at start.
func TestClient_ASecretReadAnewIsScrubbedFromAnEcho(t *testing.T) {
	t.Parallel()
	srv := startRevokingSim(t, 0, nil)
	var before atomic.Pointer[func()]
	proxy := echoingProxy(t, srv, &before)
	path := filepath.Join(t.TempDir(), "api-secret")
	writeSecret(t, path, "sim-secret")
	scr := secret.NewScrubber()
	var logs lockedBuffer
	c := fileClient(t, proxy.URL, path, scr, &logs)
	ctx := t.Context()
	if err := cloudWindow(ctx, c, 0); err != nil {
		t.Fatal(err)
	}
	const next = `next&secret<"2">+/=`
	writeSecret(t, path, next) // the platform still has the old one
	srv.RevokeTokens("sim-admin")
	err := cloudWindow(ctx, c, 1)
	if err == nil || !strings.Contains(err.Error(), "wrong secret") || !strings.Contains(err.Error(), secret.Redacted) {
		t.Fatalf("err = %v, want the echo of the refused secret, redacted", err)
	}
	for _, form := range []string{next, html.EscapeString(next), url.QueryEscape(next), "next&amp;secret", base64.StdEncoding.EncodeToString([]byte("X-SVC-UAKS: " + next))[:24]} {
		if strings.Contains(err.Error(), form) || strings.Contains(logs.String(), form) {
			t.Fatalf("the new secret shows as %q:\n%v\n%s", form, err, logs.String())
		}
	}
}

// When the token endpoint refuses the secret because the key was rotated
// while the request was under way, and the file was rewritten meanwhile,
// the client asks again at once with the file's new content: the request
// does not fail.
func TestClient_C1_ASecretRotatedDuringATokenRequestIsReadAgain(t *testing.T) {
	t.Parallel()
	srv := startRevokingSim(t, 0, nil)
	var before atomic.Pointer[func()]
	proxy := echoingProxy(t, srv, &before)
	path := filepath.Join(t.TempDir(), "api-secret")
	writeSecret(t, path, "sim-secret")
	c := fileClient(t, proxy.URL, path, secret.NewScrubber(), io.Discard)
	ctx := t.Context()
	if err := cloudWindow(ctx, c, 0); err != nil {
		t.Fatal(err)
	}
	rotate := func() {
		writeSecret(t, path, "rotated-while-asking")
		if err := srv.SetKeySecret("sim-key", "rotated-while-asking"); err != nil {
			t.Error(err)
		}
	}
	before.Store(&rotate)
	srv.RevokeTokens("sim-admin")
	if err := cloudWindow(ctx, c, 1); err != nil {
		t.Fatalf("a secret rotated during the token request: %v", err)
	}
	tok := srv.Stats().Get("sim-admin", FunctionalityToken)
	if tok.Unauthorized != 1 || tok.Requests != 3 {
		t.Fatalf("token requests %d, refused %d: want the first token, one refused and one asked again", tok.Requests, tok.Unauthorized)
	}
}

// edgeWindow asks the simulator's edge audit events of the i-th minute
// before an hour ago (C6).
func edgeWindow(c *Client, t *testing.T, i int) error {
	end := time.Now().Add(-time.Hour).Truncate(time.Minute).Add(-time.Duration(i) * time.Minute)
	u := fmt.Sprintf("/api/v1/audit_events?start_time=%d&end_time=%d", end.Add(-time.Minute).UnixMilli(), end.UnixMilli())
	_, err := c.Do(t.Context(), Request{Method: http.MethodGet, URL: u, Functionality: FunctionalityEdge, What: fmt.Sprintf("fetch edge minute %d", i), Decode: decodeJSON})
	return err
}

// Issue 29 item 8: edge.token_file is read again when the edge API refuses
// the token (C6: it is never renewed), and the request repeated at once
// when the file holds another token: rotating the file and then the token
// loses no request. A token rotated on the platform alone stays refused,
// for good, until the file holds it.
func TestClient_C6_ARotatedEdgeTokenFileIsUsedWithoutARestart(t *testing.T) {
	t.Parallel()
	srv := startRevokingSim(t, 0, nil)
	path := filepath.Join(t.TempDir(), "edge-token")
	writeSecret(t, path, "sim-edge-token")
	scr := secret.NewScrubber()
	cfg := DefaultEdgeConfig()
	cfg.BaseURL, cfg.TokenFile, cfg.Timeout = srv.EdgeURL(), path, 10*time.Second
	core := DefaultConfig()
	core.Retry = RetryConfig{Initial: time.Millisecond, Max: 20 * time.Millisecond}
	c, err := NewEdgeClient(cfg, core, nil, Options{Logger: discardLogger(), Scrubber: scr})
	if err != nil {
		t.Fatal(err)
	}
	if err := edgeWindow(c, t, 0); err != nil {
		t.Fatal(err)
	}
	const second = "edge-token-2/rotated+x"
	writeSecret(t, path, second)
	if err := srv.SetEdgeToken(second); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := edgeWindow(c, t, i); err != nil {
			t.Fatalf("after rotating the file, then the token: %v", err)
		}
	}
	if err := srv.SetEdgeToken("edge-token-3-on-the-platform"); err != nil {
		t.Fatal(err)
	}
	err = edgeWindow(c, t, 4)
	if reason, permanent := PermanentReason(err); !permanent || reason != ReasonUnauthorized {
		t.Fatalf("the token rotated, the file not yet: %v (permanent %v, reason %q), want a permanent 401", err, permanent, reason)
	}
	writeSecret(t, path, "edge-token-3-on-the-platform")
	if err := edgeWindow(c, t, 5); err != nil {
		t.Fatalf("after rewriting the file: %v", err)
	}
	for _, s := range []string{"sim-edge-token", second, "edge-token-3-on-the-platform"} {
		if got := scr.Scrub(s); got != secret.Redacted {
			t.Errorf("the scrubber does not know %q: %q", s, got)
		}
	}
}
