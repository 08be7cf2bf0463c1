package tap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
)

// writeToken writes tok to a fresh file (with the newline an editor or a
// Kubernetes Secret leaves) and returns its path.
func writeToken(t *testing.T, dir, tok string) string {
	t.Helper()
	p := filepath.Join(dir, "tap-token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// get GETs /tap?q on srv with the Authorization header auth ("" none)
// and returns the status, the WWW-Authenticate header and the body.
func get(t *testing.T, srv string, q, auth string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv+"/tap?"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
}

// With a token file, a tap without the token or with another gets 401
// (and learns nothing of what is collected), one with it gets its stream;
// the file is read at every tap, so a rotated token applies to the next
// one; a file that cannot be read refuses every tap (503), never lets one
// through. Issue 29 item 1.
func TestATapMustSendTheTokenOfItsFile(t *testing.T) {
	t.Parallel()
	const tok = "0123456789abcdef0123456789abcdef"
	path := writeToken(t, t.TempDir(), tok)
	h := NewHub(Options{Streams: []record.Stream{{Source: "dns", Account: "acme"}}, TokenFile: path})
	srv := serve(t, h)
	const q = "source=dns&timeout=50ms"
	for name, c := range map[string]struct {
		q, auth string
		want    int
	}{
		"no header":             {q, "", 401},
		"wrong token":           {q, "Bearer " + strings.Repeat("x", len(tok)), 401},
		"a prefix of the token": {q, "Bearer " + tok[:20], 401},
		"not bearer":            {q, "Basic " + tok, 401},
		"empty bearer":          {q, "Bearer ", 401},
		"unknown source, no token (learns nothing)": {"source=nope", "", 401},
		"the token":                     {q, "Bearer " + tok, 200},
		"the token, scheme in any case": {q, "bearer " + tok, 200},
	} {
		code, www, body := get(t, srv.URL, c.q, c.auth)
		if code != c.want {
			t.Errorf("%s: %d %q, want %d", name, code, body, c.want)
		}
		if code == 401 && (www == "" || strings.Contains(body, tok) || strings.Contains(body, "dns")) {
			t.Errorf("%s: 401 with WWW-Authenticate %q and body %q: want the header, and neither the token nor what is collected", name, www, body)
		}
	}

	// The client: no token is refused, saying how to send one; the token
	// gets the stream.
	_, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "dns", Timeout: 50 * time.Millisecond}, io.Discard)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("Read without a token: %v, want refused, naming --token-file", err)
	}
	res, err := Read(t.Context(), nil, srv.URL, secret.New(tok), Request{Source: "dns", Timeout: 50 * time.Millisecond}, io.Discard)
	if err != nil || res.End != EndTimeout {
		t.Errorf("Read with the token: %+v, %v; want a tap ended by its timeout", res, err)
	}

	// A rotated token applies to the next tap.
	const tok2 = "fedcba9876543210fedcba9876543210"
	writeToken(t, filepath.Dir(path), tok2)
	if code, _, body := get(t, srv.URL, q, "Bearer "+tok); code != 401 {
		t.Errorf("the old token after rotation: %d %q, want 401", code, body)
	}
	if code, _, body := get(t, srv.URL, q, "Bearer "+tok2); code != 200 {
		t.Errorf("the new token after rotation: %d %q, want 200", code, body)
	}

	// A token file gone (or emptied) refuses every tap.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if code, _, body := get(t, srv.URL, q, "Bearer "+tok2); code != 503 {
		t.Errorf("the token file gone: %d %q, want 503", code, body)
	}
}

// ReadToken refuses what is no usable token, naming the file and never its
// content.
func TestReadTokenRefusesAMissingEmptyOrShortToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if tok, err := ReadToken(writeToken(t, dir, "  0123456789abcdef  ")); err != nil || tok.Reveal() != "0123456789abcdef" {
		t.Errorf("a 16-character token: %q, %v", tok.Reveal(), err)
	}
	for name, c := range map[string]struct{ path, want string }{
		"missing": {filepath.Join(dir, "nope"), "does not exist"},
		"empty":   {writeToken(t, t.TempDir(), " "), "is empty"},
		"short":   {writeToken(t, t.TempDir(), "s3cr3t-but-short"[:15]), "fewer than 16"},
		"a dir":   {dir, "not a regular file"},
	} {
		_, err := ReadToken(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v, want an error saying %q, without the content", name, err, c.want)
		}
	}
}

// A tap of a source, or of an account, the collector does not collect is
// refused at once (it would wait forever), naming what is collected, with
// a did-you-mean for a near miss. Issue 29 item 1.
func TestATapOfWhatIsNotCollectedIsRefusedAtOnceNamingWhatIs(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{Streams: []record.Stream{
		{Source: "dns", Account: "acme"}, {Source: "dns", Account: "acme-dev"}, {Source: "user_logins", Account: "acme"},
		{Source: "audit_logs", Account: "org"},
	}})
	srv := serve(t, h)
	for req, want := range map[Request][]string{
		{Source: "dsn"}:                           {`source "dsn" is not collected`, `did you mean "dns"?`, "it collects: audit_logs, dns, user_logins"},
		{Source: "user_login"}:                    {`did you mean "user_logins"?`},
		{Source: "edge_alerts"}:                   {`source "edge_alerts" is not collected`, "it collects: audit_logs, dns, user_logins"},
		{Source: "dns", Account: "nope"}:          {`account "nope" of source "dns" is not collected`, "its accounts: acme, acme-dev"},
		{Source: "dns", Account: "acme-de"}:       {`did you mean "acme-dev"?`},
		{Source: "user_logins", Account: "org"}:   {"its accounts: acme"},
		{Source: "audit_logs", Account: "acme"}:   {"its accounts: org"},
		{Source: "dns", Account: "totally-other"}: {"its accounts: acme, acme-dev"},
	} {
		// No timeout: before the fix these waited forever; the context
		// bounds the test, far above "at once".
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := Read(ctx, nil, srv.URL, secret.Secret{}, req, io.Discard)
		cancel()
		if !errors.Is(err, ErrRefused) {
			t.Errorf("%+v: %v, want refused at once", req, err)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want it to say %s", req, err, w)
			}
		}
		if strings.Contains(err.Error(), "did you mean") && req.Source == "edge_alerts" {
			t.Errorf("%+v: %v: no source is near edge_alerts", req, err)
		}
	}
	if h.Clients() != 0 {
		t.Errorf("%d taps hold a place after refusals", h.Clients())
	}
}

// With the tap off (metrics.tap.enabled false), /tap says so and `collector
// tap` repeats it.
func TestTheTapOffSaysHowToTurnItOn(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle("/tap", Off())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "dns"}, io.Discard)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "metrics.tap.enabled") {
		t.Errorf("tap off: %v, want refused naming metrics.tap.enabled", err)
	}
}

// rawTap sends a tap's request on a raw TCP connection to addr and never
// reads the answer: a client that stopped reading (or a hostile one).
func rawTap(t *testing.T, addr, q string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4 << 10) // small, so that the server's writes block sooner
	}
	if _, err := fmt.Fprintf(c, "GET /tap?%s HTTP/1.1\r\nHost: collector\r\n\r\n", q); err != nil {
		t.Fatal(err)
	}
	return c
}

// Four clients that send a tap's request and never read lose their
// places once the collector delivers (a write waits Options.Stall, then
// the tap ends), so that a fifth tap is served; before, they held all
// four places until they left. Issue 29 item 1.
func TestClientsThatNeverReadLoseTheirPlaces(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{Stall: 100 * time.Millisecond})
	srv := serve(t, h)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for range MaxClients {
		rawTap(t, addr, Request{Source: "dns", Limit: MaxLimit}.Query().Encode())
	}
	waitClients(t, h, MaxClients)
	b := batch("dns", "acme", 200, 0, 2000) // 400 kB a batch: the sockets' buffers fill
	for deadline := time.Now().Add(time.Minute); h.Clients() > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d clients that never read still hold their places after a minute of deliveries", h.Clients())
		}
		h.Publish(b)
		time.Sleep(time.Millisecond)
	}
	res, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "dns", Timeout: 50 * time.Millisecond}, io.Discard)
	if err != nil || res.End != EndTimeout {
		t.Errorf("a tap after the stalled ones left: %+v, %v", res, err)
	}
}
