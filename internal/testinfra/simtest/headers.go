package simtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// HeaderRecorder is a server that should never be asked (another origin, a
// redirect's target): it records the headers of every request it gets and
// answers an empty page, so that a test can check what leaked to it.
type HeaderRecorder struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	mu      sync.Mutex
	headers []http.Header
}

// NewHeaderRecorder starts a HeaderRecorder on loopback, closed when tb
// ends.
func NewHeaderRecorder(tb testing.TB) *HeaderRecorder {
	tb.Helper()
	rc := &HeaderRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.headers = append(rc.headers, r.Header.Clone())
		rc.mu.Unlock()
		fmt.Fprint(w, `{"data":[]}`)
	}))
	tb.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

// Seen returns the headers of every request received so far.
func (rc *HeaderRecorder) Seen() []http.Header {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]http.Header(nil), rc.headers...)
}

// NoCredentials fails tb when any of hs holds a credential or an account
// header (C1, C2: Authorization, Account-Name, Org-Access, the secret's
// header) or any of the values secrets, whichever header carries it. who
// names the receiver in the failure.
func NoCredentials(tb testing.TB, who string, hs []http.Header, secrets ...string) {
	tb.Helper()
	for _, h := range hs {
		for _, k := range []string{"Authorization", "Account-Name", "Org-Access", "X-SVC-UAKS"} {
			if v := h.Get(k); v != "" {
				tb.Errorf("%s received %s: %q", who, k, v)
			}
		}
		for k, vs := range h {
			for _, v := range vs {
				for _, s := range secrets {
					if s != "" && strings.Contains(v, s) {
						tb.Errorf("%s received a credential in %s", who, k)
					}
				}
			}
		}
	}
}
