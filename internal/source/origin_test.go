package source

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/origin"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// C1, C3: a next-page URL of another origin never receives the bearer
// token or the account header: it is refused before any request, as a
// permanent error of kind "origin". With the origin allowed, the walk goes
// on there (the test's control: the other server does get asked then).
func TestPoller_C1_C3_NextPageOfAnotherOriginGetsNoCredentials(t *testing.T) {
	t.Parallel()
	times := spread(time.Now().Add(-20*time.Hour), 30, 10*time.Minute)
	other := newPageServer(t, times, 10, nil)
	samePort := func(prefix string) func(r *http.Request) string {
		return func(r *http.Request) string {
			_, port, _ := net.SplitHostPort(r.Host)
			return prefix + port
		}
	}
	for _, tt := range []struct {
		name     string
		nextBase func(r *http.Request) string
	}{
		{"another port", func(*http.Request) string { return other.srv.URL }},
		{"another host on the same port", samePort("http://localhost:")},
		{"another scheme on the same port", samePort("https://127.0.0.1:")},
		{"user info and another port", func(*http.Request) string {
			return strings.Replace(other.srv.URL, "http://", "http://user:pw-SECRET-9@", 1)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := newPageServer(t, times, 10, func(s *pageServer) { s.nextBase = tt.nextBase })
			before := other.requests()
			e := newEnv(t, pageServerConfig(home), nil)
			col := newTally(len(times))
			// Bounded: with the defect, a refused origin would be retried
			// as a network error for ever.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := e.poller(catalog.SourceDNS, "acme", true).Run(ctx, cursor.Cursor{}, col)
			var oe *origin.Error
			if !errors.As(err, &oe) || !api.IsPermanent(err) || oe.Redirect {
				t.Fatalf("err = %v, want a permanent *OriginError", err)
			}
			if got := other.requests() - before; got != 0 {
				t.Fatalf("the other origin got %d requests", got)
			}
			if got := home.requests(); got != 1 {
				t.Fatalf("home got %d data requests, want the first page only", got)
			}
			if got := testutilValue(e.metrics.PollErrors(catalog.SourceDNS, "acme", "origin")); got != 1 {
				t.Fatalf("poll errors{kind=origin} = %v, want 1", got)
			}
			for _, s := range []string{err.Error(), e.logs.String()} {
				if strings.Contains(s, "pw-SECRET-9") || strings.Contains(s, "user:") {
					t.Fatalf("user info of the URL shown: %s", s)
				}
			}
		})
	}
	// Whatever reached the other origin so far carried no credential.
	simtest.NoCredentials(t, "the other origin", other.seen(), "the-secret-value", "tok-")

	t.Run("allowed", func(t *testing.T) {
		home := newPageServer(t, times, 10, func(s *pageServer) {
			s.nextBase = func(*http.Request) string { return other.srv.URL }
		})
		cfg := pageServerConfig(home)
		cfg.API.AllowedOrigins = []string{strings.ToUpper(other.srv.URL) + "/"}
		before := other.requests()
		e := newEnv(t, cfg, nil)
		col := newTally(len(times))
		if err := e.poller(catalog.SourceDNS, "acme", true).Run(t.Context(), cursor.Cursor{}, col); err != nil {
			t.Fatal(err)
		}
		if m := col.missing(); m != 0 {
			t.Fatalf("%d records missing", m)
		}
		hs := other.seen()
		if got := other.requests() - before; got != 2 || hs[len(hs)-1].Get("Authorization") != "Bearer tok-1" || hs[len(hs)-1].Get("Account-Name") != "acme" {
			t.Fatalf("allowed origin got %d requests, last headers %v", got, hs[len(hs)-1])
		}
	})
}
