package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check reports a problem as an error, nil when all is well. It must return
// quickly; the server gives it a deadline of CheckTimeout.
type Check func(ctx context.Context) error

// CheckTimeout bounds every readiness and liveness check.
const CheckTimeout = 5 * time.Second

// Timeouts bound what a client of the server may hold: without them, a
// client that connects and sends nothing, keeps a connection idle, or
// stops reading a response holds a connection and its goroutine until it
// leaves.
type Timeouts struct {
	// ReadHeader is how long a client may take to send a request's
	// header; a connection that sends none is closed after it.
	ReadHeader time.Duration
	// Idle is how long a kept-alive connection may wait for its next
	// request.
	Idle time.Duration
	// Write bounds the writing of one response. A handler that streams
	// (/tap) moves its own deadline write by write
	// (http.ResponseController); a profile (metrics.pprof) must take less.
	Write time.Duration
}

// DefaultTimeouts are the server's Timeouts unless SetTimeouts changes
// them: generous for a scrape or a probe on a busy host, short enough
// that stalled clients do not pile up.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Idle: 2 * time.Minute, Write: 2 * time.Minute}
}

// Server serves /metrics, /healthz and /readyz. The zero value is not
// usable; build it with New. Its methods are safe for concurrent use.
type Server struct {
	addr string
	reg  *prometheus.Registry
	log  *slog.Logger

	mu        sync.Mutex
	readiness map[string]Check
	degraded  map[string]Check // readiness checks that name a failure without failing /readyz
	liveness  map[string]Check
	handlers  map[string]http.Handler
	profiles  bool
	timeouts  Timeouts
	srv       *http.Server
	ln        net.Listener
	done      chan struct{}
}

// NewRegistry returns a registry with the Go runtime and process collectors
// and a collector_build_info gauge carrying version and commit.
func NewRegistry(version, commit string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bi := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "collector_build_info",
		Help: "Build of the running collector; always 1.",
	}, []string{"version", "commit"})
	bi.WithLabelValues(version, commit).Set(1)
	reg.MustRegister(bi)
	return reg
}

// New returns a server that will listen on addr (host:port; port 0 picks a
// free one) and serve the metrics of reg.
func New(addr string, reg *prometheus.Registry, log *slog.Logger) *Server {
	return &Server{addr: addr, reg: reg, log: log, readiness: map[string]Check{}, degraded: map[string]Check{}, liveness: map[string]Check{}, timeouts: DefaultTimeouts()}
}

// SetTimeouts replaces the server's Timeouts (DefaultTimeouts); call it
// before Start. A zero field is no limit.
func (s *Server) SetTimeouts(t Timeouts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timeouts = t
}

// AddReadiness registers a named readiness check (a sink that cannot reach its
// server, a checkpoint that cannot be written); a check of the same name
// is replaced. /readyz fails while any fails, and passes when none is
// registered: a process that starts the server before it is ready
// registers a check saying what it waits for before Start.
func (s *Server) AddReadiness(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readiness[name] = c
}

// AddDegraded registers a named readiness check whose failure /readyz
// shows (under checks, and its name under "degraded") without failing:
// one tenant of many whose key is refused degrades the collector, which
// serves the others, rather than making it unready (docs/tenants.md).
func (s *Server) AddDegraded(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.degraded[name] = c
}

// AddLiveness registers a named liveness check (a pipeline that stopped
// making progress). /healthz fails while any fails, which makes an
// orchestrator restart the process.
func (s *Server) AddLiveness(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.liveness[name] = c
}

// AddHandler serves h at path (GET) beside the three endpoints, e.g. the
// collector's live /state; a path "POST /p" serves POSTs to /p (the
// collector's POST /-/reload). It may be called before or after Start; a later
// call for the same path replaces the handler (the collector's /state of
// the checkpoint while it starts, then the live one).
func (s *Server) AddHandler(path string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handlers == nil {
		s.handlers = map[string]http.Handler{}
	}
	s.handlers[path] = h
}

// ServeProfiles adds Go's runtime profiles (net/http/pprof) under
// /debug/pprof/ to the endpoints; call it before Start.
func (s *Server) ServeProfiles() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.profiles = true
}

// Handler returns the HTTP handler of the endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.handlers[r.URL.Path]
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
	// A handler added as "POST /path" answers POSTs (the collector's
	// POST /-/reload).
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		h := s.handlers["POST "+r.URL.Path]
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { s.serveChecks(w, r, s.checks(true), nil) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { s.serveChecks(w, r, s.checks(false), s.degradedChecks()) })
	s.mu.Lock()
	profiles := s.profiles
	s.mu.Unlock()
	if profiles {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index) // heap, allocs, goroutine... by name
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func (s *Server) checks(live bool) map[string]Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	src := s.readiness
	if live {
		src = s.liveness
	}
	out := make(map[string]Check, len(src))
	for k, v := range src {
		out[k] = v
	}
	return out
}

func (s *Server) degradedChecks() map[string]Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Check, len(s.degraded))
	for k, v := range s.degraded {
		out[k] = v
	}
	return out
}

// serveChecks answers with every check of checks and degraded: 503 when
// one of checks fails; a failing check of degraded is named under
// "degraded" (absent when none fails) and fails nothing.
func (s *Server) serveChecks(w http.ResponseWriter, r *http.Request, checks, degraded map[string]Check) {
	ctx, cancel := context.WithTimeout(r.Context(), CheckTimeout)
	defer cancel()
	names := make([]string, 0, len(checks))
	for n := range checks {
		names = append(names, n)
	}
	sort.Strings(names)
	result := map[string]string{}
	ok := true
	for _, n := range names {
		if err := checks[n](ctx); err != nil {
			ok = false
			result[n] = err.Error()
		} else {
			result[n] = "ok"
		}
	}
	var down []string
	for _, n := range slices.Sorted(maps.Keys(degraded)) {
		if err := degraded[n](ctx); err != nil {
			down = append(down, n)
			result[n] = err.Error()
		} else {
			result[n] = "ok"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	status := "ok"
	if !ok {
		status = "failing"
	}
	body := map[string]any{"status": status, "checks": result}
	if len(down) > 0 {
		body["degraded"] = down
	}
	_ = json.NewEncoder(w).Encode(body)
}

// Start listens and serves in the background. It returns an error when the
// address cannot be bound (another process holds the port).
func (s *Server) Start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("metrics listen on %s: %w", s.addr, err)
	}
	s.mu.Lock()
	to := s.timeouts
	s.mu.Unlock()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: to.ReadHeader, IdleTimeout: to.Idle, WriteTimeout: to.Write}
	done := make(chan struct{})
	s.mu.Lock()
	s.srv, s.ln, s.done = srv, ln, done
	s.mu.Unlock()
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics server stopped", "err", err)
		}
	}()
	s.log.Info("serving metrics and health", "addr", ln.Addr().String())
	return nil
}

// Addr returns the address the server listens on, empty before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops the server; safe twice or without Start.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	select {
	case <-done:
	case <-ctx.Done():
	}
	return err
}
