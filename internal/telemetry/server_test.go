package telemetry

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

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

// A client that connects and sends nothing, and one that keeps its
// connection idle after a request, are closed after the server's
// ReadHeader and Idle timeouts (issue 29 item 1: without Idle, an idle
// connection was held until the client left). Raw TCP clients, with the
// timeouts made short; the test waits for the close, it does not time it.
func TestStalledConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	s := New("127.0.0.1:0", NewRegistry("x", "y"), slog.New(slog.DiscardHandler))
	s.SetTimeouts(Timeouts{ReadHeader: 200 * time.Millisecond, Idle: 200 * time.Millisecond, Write: time.Minute})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	dial := func() net.Conn {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// A bound on the test, far above the timeouts: a read that
		// reaches it means the server kept the connection.
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		return c
	}
	closed := func(what string, r io.Reader) {
		t.Helper()
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Errorf("%s: %v, want the server to close the connection", what, err)
		}
	}

	silent := dial()
	closed("a connection that sends nothing", silent)

	idle := dial()
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("GET /healthz: %s, close %v; want 200 on a kept-alive connection", resp.Status, resp.Close)
	}
	closed("an idle kept-alive connection", br)
}

// The server's default timeouts are set: none is "no limit".
func TestDefaultTimeoutsAreSet(t *testing.T) {
	t.Parallel()
	d := DefaultTimeouts()
	if d.ReadHeader <= 0 || d.Idle <= 0 || d.Write <= 0 {
		t.Errorf("DefaultTimeouts() = %+v: each must bound its client", d)
	}
}

// Issue 32: a degraded check (one tenant of many refused) is named in
// /readyz, under checks and degraded, without failing it; a readiness
// check still fails it. With none degraded the body has no "degraded".
func TestADegradedCheckIsNamedWithoutFailingReadiness(t *testing.T) {
	s := New("127.0.0.1:0", NewRegistry("v", "c"), slog.New(slog.DiscardHandler))
	var beta error
	s.AddReadiness("checkpoint", func(context.Context) error { return nil })
	s.AddDegraded("tenant:alpha", func(context.Context) error { return nil })
	s.AddDegraded("tenant:beta", func(context.Context) error { return beta })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	url := "http://" + s.Addr() + "/readyz"
	if code, body := get(t, url); code != 200 || strings.Contains(body, "degraded") || !strings.Contains(body, `"tenant:beta":"ok"`) {
		t.Fatalf("readyz, all well: %d %s", code, body)
	}
	beta = errors.New("1 streams blocked: beta:dns/acme: unauthorized")
	code, body := get(t, url)
	if code != 200 || !strings.Contains(body, `"degraded":["tenant:beta"]`) || !strings.Contains(body, "beta:dns/acme: unauthorized") || !strings.Contains(body, `"status":"ok"`) {
		t.Fatalf("readyz, one tenant refused: %d %s", code, body)
	}
	s.AddReadiness("checkpoint", func(context.Context) error { return errors.New("disk full") })
	if code, body := get(t, url); code != 503 {
		t.Fatalf("readyz, a readiness check failing: %d %s", code, body)
	}
}
