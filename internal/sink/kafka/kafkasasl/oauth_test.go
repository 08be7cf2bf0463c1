package kafkasasl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/secret"
)

// tokenServer is an OAuth 2.0 token endpoint for tests: it checks the
// client-credentials request and answers with numbered tokens.
type tokenServer struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	issued []string
	// answer, when set, replaces the normal answer.
	answer    func(w http.ResponseWriter) bool
	expiresIn any // the expires_in member; nil leaves it out
	post      bool
	scope     string
	hold      chan struct{} // when set, each request waits for it
}

const (
	clientID     = "collector client"
	clientSecret = "s3cr3t-client-secret"
)

func newTokenServer(t *testing.T) *tokenServer {
	ts := &tokenServer{t: t, expiresIn: 100}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	ts.mu.Lock()
	hold, answer := ts.hold, ts.answer
	ts.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.PostForm.Get("grant_type") != "client_credentials" ||
		r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		ts.t.Errorf("token request %s %s form %v (%v), content-type %q", r.Method, r.URL, r.PostForm, err, r.Header.Get("Content-Type"))
	}
	id, sec, basic := r.BasicAuth()
	if ts.post {
		id, sec, basic = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret"), r.Header.Get("Authorization") != ""
		if basic {
			ts.t.Error("client_secret_post request also has an Authorization header")
		}
	} else if basic {
		// RFC 6749 section 2.3.1: form-encoded, then Basic.
		id = strings.ReplaceAll(id, "+", " ")
	}
	if id != clientID || sec != clientSecret || (!ts.post && !basic) {
		ts.t.Errorf("client %q secret ok=%v basic=%v", id, sec == clientSecret, basic)
	}
	if got := r.PostForm.Get("scope"); got != ts.scope {
		ts.t.Errorf("scope %q, want %q", got, ts.scope)
	}
	if answer != nil && answer(w) {
		return
	}
	ts.mu.Lock()
	tok := fmt.Sprintf("token-%d", len(ts.issued)+1)
	ts.issued = append(ts.issued, tok)
	ts.mu.Unlock()
	body := map[string]any{"access_token": tok, "token_type": "bearer"}
	if ts.expiresIn != nil {
		body["expires_in"] = ts.expiresIn
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}

func (ts *tokenServer) requests() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.issued)
}

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// grant builds the token function of a client-credentials configuration
// against ts, with the clock and a log buffer.
func grant(t *testing.T, ts *tokenServer, clk *clock, logs *bytes.Buffer, mutate ...func(*OAuthConfig)) func(context.Context) (string, error) {
	t.Helper()
	o := OAuthConfig{TokenURL: ts.srv.URL + "/oauth2/token", ClientID: clientID, ClientSecret: secret.New(clientSecret)}
	for _, m := range mutate {
		m(&o)
	}
	c := Config{Mechanism: OAuthBearer, OAuth: o}
	if err := c.Validate("sink.kafka.sasl"); err != nil {
		t.Fatal(err)
	}
	opts := Options{Prefix: "sink.kafka.sasl", Now: clk.now, Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	opts.defaults()
	f, err := o.tokenFunc("sink.kafka.sasl.oauth", opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustToken(t *testing.T, f func(context.Context) (string, error)) string {
	t.Helper()
	tok, err := f(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// The token of a client-credentials grant is asked for once and kept
// until a quarter of its lifetime (at most a minute) before it expires;
// then a new one is asked for. Concurrent authentications share one
// request.
func TestClientCredentialsTokenIsCachedAndRenewedBeforeItExpires(t *testing.T) {
	ts := newTokenServer(t)
	ts.scope = "kafka api://x/.default"
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	var logs bytes.Buffer
	f := grant(t, ts, clk, &logs, func(o *OAuthConfig) { o.Scopes = []string{"kafka", "api://x/.default"} })

	// Ten connections authenticate at once while the endpoint is slow.
	hold := make(chan struct{})
	ts.mu.Lock()
	ts.hold = hold
	ts.mu.Unlock()
	var wg sync.WaitGroup
	got := make([]string, 10)
	for i := range got {
		wg.Go(func() { got[i] = mustToken(t, f) })
	}
	time.AfterFunc(50*time.Millisecond, func() { close(hold) })
	wg.Wait()
	for _, tok := range got {
		if tok != "token-1" {
			t.Fatalf("concurrent authentications got %v, want token-1 each", got)
		}
	}
	if n := ts.requests(); n != 1 {
		t.Fatalf("%d token requests for 10 concurrent authentications, want 1", n)
	}

	// expires_in 100 s: renewed 25 s before it expires.
	clk.add(74 * time.Second)
	if tok := mustToken(t, f); tok != "token-1" || ts.requests() != 1 {
		t.Fatalf("at 74 s: %s after %d requests, want the cached token-1", tok, ts.requests())
	}
	clk.add(2 * time.Second)
	if tok := mustToken(t, f); tok != "token-2" || ts.requests() != 2 {
		t.Fatalf("at 76 s: %s after %d requests, want a new token-2", tok, ts.requests())
	}
	// A long-lived token renews a minute before it expires.
	ts.expiresIn = "3600" // some endpoints send a string
	clk.add(time.Hour)
	mustToken(t, f)
	clk.add(3539 * time.Second)
	if tok := mustToken(t, f); tok != "token-3" {
		t.Fatalf("59 min in: %s, want the cached token-3", tok)
	}
	clk.add(2 * time.Second)
	if tok := mustToken(t, f); tok != "token-4" {
		t.Fatalf("past 59 min: %s, want token-4", tok)
	}
	for _, s := range []string{clientSecret, "token-1", "token-2", "token-3", "token-4"} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the log holds %q:\n%s", s, logs.String())
		}
	}
}

// Without expires_in, a JWT's exp claim gives the lifetime; a token whose
// lifetime nothing tells is never reused.
func TestTokenLifetimeFromTheJWTOrNone(t *testing.T) {
	ts := newTokenServer(t)
	ts.expiresIn = nil
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	var logs bytes.Buffer
	f := grant(t, ts, clk, &logs)
	mustToken(t, f)
	mustToken(t, f)
	if n := ts.requests(); n != 2 {
		t.Fatalf("%d requests for two authentications with tokens of unknown lifetime, want 2", n)
	}
	exp := clk.now().Add(10 * time.Minute).Unix()
	jwt := "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"sub":"c","exp":%d}`, exp)) + ".c2ln"
	ts.answer = func(w http.ResponseWriter) bool {
		ts.mu.Lock()
		ts.issued = append(ts.issued, jwt)
		ts.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer"}`, jwt)
		return true
	}
	clk.add(time.Second)
	mustToken(t, f)
	clk.add(8 * time.Minute) // refresh at 9 min (a minute before exp)
	if tok := mustToken(t, f); tok != jwt || ts.requests() != 3 {
		t.Fatalf("8 min into a 10-min JWT: %d requests, want it cached", ts.requests())
	}
	clk.add(90 * time.Second)
	mustToken(t, f)
	if n := ts.requests(); n != 4 {
		t.Fatalf("9.5 min into a 10-min JWT: %d requests, want a renewal", n)
	}
}

// client_auth post sends the client's credentials in the form instead of
// HTTP Basic.
func TestClientSecretPost(t *testing.T) {
	ts := newTokenServer(t)
	ts.post = true
	var logs bytes.Buffer
	f := grant(t, ts, &clock{t: time.Now()}, &logs, func(o *OAuthConfig) { o.ClientAuth = ClientAuthPost })
	if tok := mustToken(t, f); tok != "token-1" {
		t.Fatal(tok)
	}
}

// A refusal by the endpoint is an error naming the key, the status and
// the endpoint's reason, never the secret. While the current token is
// still valid a failed renewal keeps it (logged); once it expired the
// failure is the authentication's.
func TestTokenEndpointFailures(t *testing.T) {
	ts := newTokenServer(t)
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	var logs bytes.Buffer
	f := grant(t, ts, clk, &logs)
	mustToken(t, f)
	ts.answer = func(w http.ResponseWriter) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client","error_description":"Client authentication failed"}`)
		return true
	}
	clk.add(80 * time.Second) // past the refresh time, before the expiry
	if tok := mustToken(t, f); tok != "token-1" {
		t.Fatalf("a failed renewal of a valid token gave %q", tok)
	}
	if !strings.Contains(logs.String(), "token refresh failed") || !strings.Contains(logs.String(), "invalid_client") {
		t.Errorf("the failed renewal is not logged:\n%s", logs.String())
	}
	clk.add(30 * time.Second) // expired
	_, err := f(context.Background())
	if err == nil {
		t.Fatal("an expired token was used")
	}
	for _, want := range []string{"sink.kafka.sasl.oauth.token_url: token request to " + ts.srv.URL + "/oauth2/token", "status 401: invalid_client (Client authentication failed)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	for name, answer := range map[string]func(w http.ResponseWriter) bool{
		"html": func(w http.ResponseWriter) bool {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>")
			return true
		},
		"no token": func(w http.ResponseWriter) bool { fmt.Fprint(w, `{"token_type":"bearer"}`); return true },
		"mac token": func(w http.ResponseWriter) bool {
			fmt.Fprint(w, `{"access_token":"x","token_type":"mac"}`)
			return true
		},
		"bad expiry": func(w http.ResponseWriter) bool {
			fmt.Fprint(w, `{"access_token":"x","expires_in":"soon"}`)
			return true
		},
		"a redirect": func(w http.ResponseWriter) bool {
			w.Header().Set("Location", "https://elsewhere.example/")
			w.WriteHeader(307)
			return true
		},
		"status only": func(w http.ResponseWriter) bool { w.WriteHeader(503); return true },
	} {
		ts.answer = answer
		_, err := f(context.Background())
		if err == nil || !strings.HasPrefix(err.Error(), "sink.kafka.sasl.oauth.token_url: ") {
			t.Errorf("%s: err = %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), clientSecret) {
			t.Errorf("%s: the error holds the secret", name)
		}
	}
	if strings.Contains(logs.String(), clientSecret) {
		t.Errorf("the log holds the client secret:\n%s", logs.String())
	}
}

// A token file is read at every authentication, so an outside process
// refreshes the token by rewriting (or replacing) the file.
func TestTokenFileIsReadAtEveryAuthentication(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "token", "first\n")
	o := OAuthConfig{TokenFile: path}
	opts := Options{}
	opts.defaults()
	f, err := o.tokenFunc("sink.kafka.sasl.oauth", opts)
	if err != nil {
		t.Fatal(err)
	}
	if tok := mustToken(t, f); tok != "first" {
		t.Fatal(tok)
	}
	// Replaced by rename, as refreshers and Kubernetes do.
	tmp := writeFile(t, dir, "token.new", "  second\n")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if tok := mustToken(t, f); tok != "second" {
		t.Fatalf("after the file changed: %q", tok)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := f(context.Background()); err == nil || !strings.Contains(err.Error(), "sink.kafka.sasl.oauth.token_file: ") {
		t.Fatalf("a vanished file: %v", err)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokenEndpointEchoingTheRequestLeaksNoSecret: a token endpoint (a
// misbehaving IdP, a debugging proxy) that answers 400 or 401 with an
// error_description echoing the whole request (the form body, the
// Authorization header, what it decoded of them) makes an error, and a log
// line when a still valid token is kept, that show no form of the client
// secret, with client_auth basic and post alike (issue 20 item 3). A
// secret of another component that the process's scrubber knows is not
// shown either.
func TestTokenEndpointEchoingTheRequestLeaksNoSecret(t *testing.T) {
	t.Parallel()
	const (
		id      = "collector client"
		secretV = `echo+me/s3cr3t=&"é%`
		other   = "the-core-api-secret"
	)
	for _, post := range []bool{false, true} {
		for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized} {
			name := fmt.Sprintf("basic %d", status)
			if post {
				name = fmt.Sprintf("post %d", status)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var served atomic.Bool // the first request gets a token, the others a refusal
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					form, _ := url.ParseQuery(string(body))
					u, p, _ := r.BasicAuth()
					w.Header().Set("Content-Type", "application/json")
					if !served.Swap(true) {
						fmt.Fprint(w, `{"access_token":"tok-1","token_type":"Bearer","expires_in":100}`)
						return
					}
					w.WriteHeader(status)
					json.NewEncoder(w).Encode(map[string]string{
						"error": "invalid_client",
						"error_description": fmt.Sprintf("bad request %s with Authorization %q: client_secret %s, basic %s:%s, and %s",
							body, r.Header.Get("Authorization"), form.Get("client_secret"), u, p, other),
					})
				}))
				t.Cleanup(srv.Close)
				if !strings.HasPrefix(srv.Listener.Addr().String(), "127.0.0.1:") {
					t.Fatalf("token endpoint on %s, want loopback", srv.Listener.Addr())
				}

				clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
				var logs bytes.Buffer
				var logMu sync.Mutex
				log := slog.New(slog.NewJSONHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
				o := OAuthConfig{TokenURL: srv.URL + "/token", ClientID: id, ClientSecret: secret.New(secretV)}
				if post {
					o.ClientAuth = ClientAuthPost
				}
				shared := secret.NewScrubber(secret.New(other))
				opts := Options{Now: clk.now, Log: log, Scrubber: shared}
				opts.defaults()
				f, err := o.tokenFunc("sink.kafka.sasl.oauth", opts)
				if err != nil {
					t.Fatal(err)
				}
				mustToken(t, f)
				clk.add(80 * time.Second) // past the refresh, before the expiry: logged, token kept
				if tok := mustToken(t, f); tok != "tok-1" {
					t.Fatalf("the valid token was not kept: %q", tok)
				}
				clk.add(30 * time.Second) // expired: the error is the caller's
				_, err = f(context.Background())
				if err == nil {
					t.Fatal("no error from a refusing endpoint")
				}
				if want := fmt.Sprintf("status %d: invalid_client (bad request", status); !strings.Contains(err.Error(), want) ||
					!strings.Contains(err.Error(), secret.Redacted) {
					t.Errorf("error %q lacks %q or the redaction mark", err, want)
				}
				t.Log(err)
				logMu.Lock()
				logged := logs.String()
				logMu.Unlock()
				if !strings.Contains(logged, "token refresh failed") {
					t.Errorf("the failed refresh is not logged:\n%s", logged)
				}
				for _, form := range secretForms(id, secretV) {
					if strings.Contains(err.Error(), form) {
						t.Errorf("the error holds %q: %v", form, err)
					}
					if strings.Contains(logged, form) {
						t.Errorf("the log holds %q:\n%s", form, logged)
					}
				}
				if strings.Contains(err.Error(), other) || strings.Contains(logged, other) {
					t.Errorf("another secret of the process leaked: %v\n%s", err, logged)
				}
			})
		}
	}
}

// secretForms are the forms of a client secret a token request carries,
// as an endpoint may echo them and a log or error may encode them again.
func secretForms(id, s string) []string {
	jsonForm, _ := json.Marshal(s)
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id) + ":" + url.QueryEscape(s)))
	out := []string{
		s,
		url.QueryEscape(s),
		strings.Trim(string(jsonForm), `"`),
		strings.Trim(strconv.Quote(s), `"`),
		basic,
		base64.StdEncoding.EncodeToString([]byte(id + ":" + s)),
	}
	// And those forms as a JSON log line or a %q shows them.
	for _, f := range slices.Clone(out) {
		j, _ := json.Marshal(f)
		out = append(out, strings.Trim(string(j), `"`), strings.Trim(strconv.Quote(f), `"`))
	}
	return out
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
