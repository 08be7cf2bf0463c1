package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/ratelog"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// C5: a body announced over max_body_bytes is refused without reading
// it: the client neither waits for nor buffers it.
func TestClient_C5_AnnouncedOversizedBodyIsNotRead(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Length", fmt.Sprint(int64(1)<<30))
		w.WriteHeader(200)
		w.Write([]byte(`{"data":[`))
		w.(http.Flusher).Flush()
		select { // a body that would take forever
		case <-r.Context().Done():
		case <-release:
		}
	}
	c, _ := testClient(t, f, nil)
	defer close(release)
	start := time.Now()
	_, err := get(c, t.Context(), "acme", false)
	var bt *BodyTooLargeError
	if !errors.As(err, &bt) || bt.Length != 1<<30 || !IsPermanent(err) {
		t.Fatalf("err = %v, want a *BodyTooLargeError", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("took %v", el)
	}
	if f.n.Load() != 1 {
		t.Fatalf("%d requests, want 1", f.n.Load())
	}
}

// C4: RateLimit-Reset: 9999999 on a 429 does not put the stream to sleep
// for 2,777 hours: the wait is clamped to the bucket's period, and the
// clamp is logged at WARN.
func TestClient_C4_HugeRateLimitResetIsClampedToThePeriod(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		if n == 1 {
			w.Header().Set("RateLimit-Remaining", "0")
			w.Header().Set("RateLimit-Reset", "9999999")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"message":"slow down"}`)
			return
		}
		fmt.Fprint(w, `{"data":[]}`)
	}
	var logs simtest.SyncBuffer
	c, _ := testClient(t, f, nil)
	c.log = slogTo(&logs)
	c.warn = ratelog.New(c.log, nil, time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := get(c, ctx, "acme", false); err != nil {
		t.Fatalf("no retry within 10 s: %v", err)
	}
	// The test client's period is one second (api.rate.period).
	if el := time.Since(start); el < time.Second || el > 3*time.Second {
		t.Fatalf("retried after %v, want about the period (1s)", el)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "RateLimit-Reset beyond the rate period") {
		t.Fatalf("clamp not logged at WARN:\n%s", logs.String())
	}
}

// A 307 to the same origin still works for a POST search: the body is sent
// again.
func TestClient_C3_SameOriginRedirectOfASearchKeepsItsBody(t *testing.T) {
	t.Parallel()
	f := &fakeAPI{}
	f.data = func(w http.ResponseWriter, r *http.Request, n int64) {
		if r.URL.Path != "/moved" {
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
			return
		}
		var b strings.Builder
		fmt.Fprint(&b, `{"data":[`)
		buf := make([]byte, 100)
		k, _ := r.Body.Read(buf)
		fmt.Fprintf(&b, `{"got":%q,"account":%q}]}`, buf[:k], r.Header.Get("Account-Name"))
		fmt.Fprint(w, b.String())
	}
	c, _ := testClient(t, f, nil)
	resp, err := c.Do(t.Context(), Request{Method: "POST", URL: "/search", Body: []byte(`{"q":1}`), Account: "acme",
		Functionality: "dns", What: "search"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resp.Body), `{\"q\":1}`) || !strings.Contains(string(resp.Body), `"account":"acme"`) {
		t.Fatalf("body %s", resp.Body)
	}
}
