package telemetry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServerReportsMetricsAndChecks(t *testing.T) {
	reg := NewRegistry("v1.2.3", "abc")
	s := New("127.0.0.1:0", reg, slog.New(slog.DiscardHandler))
	ready := errors.New("kafka unreachable")
	s.AddReadiness("sink", func(context.Context) error { return ready })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	base := "http://" + s.Addr()

	code, body := get(t, base+"/metrics")
	if code != 200 || !strings.Contains(body, `collector_build_info{commit="abc",version="v1.2.3"} 1`) || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("metrics: %d %s", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "kafka unreachable") {
		t.Fatalf("readyz while failing: %d %s", code, body)
	}
	ready = nil
	s.AddReadiness("sink", func(context.Context) error { return nil })
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("readyz when ready: %d", code)
	}
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal("second shutdown:", err)
	}
}

func TestStartFailsWhenThePortIsTaken(t *testing.T) {
	a := New("127.0.0.1:0", NewRegistry("x", "y"), slog.New(slog.DiscardHandler))
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.Background())
	b := New(a.Addr(), NewRegistry("x", "y"), slog.New(slog.DiscardHandler))
	if err := b.Start(context.Background()); err == nil {
		b.Shutdown(context.Background())
		t.Fatal("second listener on the same port must fail")
	}
}

func TestHandlersAddedAfterStartAreServed(t *testing.T) {
	s := New("127.0.0.1:0", NewRegistry("x", "y"), slog.New(slog.DiscardHandler))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if code, _ := get(t, "http://"+s.Addr()+"/state"); code != 404 {
		t.Fatalf("unknown path: %d", code)
	}
	s.AddHandler("/state", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "starting") }))
	if code, body := get(t, "http://"+s.Addr()+"/state"); code != 200 || body != "starting" {
		t.Fatalf("/state: %d %q", code, body)
	}
	// The running collector's /state replaces the starting one's.
	s.AddHandler("/state", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "live") }))
	if code, body := get(t, "http://"+s.Addr()+"/state"); code != 200 || body != "live" {
		t.Fatalf("/state after the second AddHandler: %d %q", code, body)
	}
}

// Go's profiles are served only when asked for (metrics.pprof): a heap
// profile is a gzipped protobuf, and without ServeProfiles the path is
// unknown.
func TestProfilesAreServedOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		s := New("127.0.0.1:0", NewRegistry("x", "y"), slog.New(slog.DiscardHandler))
		if on {
			s.ServeProfiles()
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		code, body := get(t, "http://"+s.Addr()+"/debug/pprof/heap")
		s.Shutdown(context.Background())
		if on && (code != 200 || !strings.HasPrefix(body, "\x1f\x8b")) {
			t.Errorf("with profiles: %d, %d bytes not gzip", code, len(body))
		}
		if !on && code != 404 {
			t.Errorf("without profiles: %d", code)
		}
	}
}
