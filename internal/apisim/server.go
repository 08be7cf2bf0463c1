package apisim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Server is the API simulator. Build it with New, serve it with Start (or
// embed Handler in another server) and stop it with Close, which must be
// called in both cases (it stops the noisy neighbour). A Server is safe for
// concurrent use.
type Server struct {
	cfg      Config
	now      func() time.Time
	gen      generator
	accounts []string // as configured
	streams  map[streamKey]*stream
	auth     *authority
	limits   *limiter
	stats    *statsTable
	edges    edgeLog
	faults   *faults
	pool     sync.Pool // *worker
	rules    windowRules

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	srv    *http.Server
	url    string
	closed bool
}

type streamKey struct {
	src     sourceID
	account string // lower case
}

// worker is the per-goroutine scratch of a request: a record and buffers.
type worker struct {
	r    rec
	rows []byte
	head []byte
}

// New validates cfg and builds a Server. When cfg.NoisyFraction is set, the
// noisy neighbour starts at once and runs until Close.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("apisim config: %w", err)
	}
	cfg.Accounts = append([]string(nil), cfg.Accounts...)
	cfg.Keys = append([]KeyConfig(nil), cfg.Keys...)
	auth, err := newAuthority(cfg.Keys, cfg.EdgeToken)
	if err != nil {
		return nil, fmt.Errorf("apisim token key: %w", err)
	}
	s := &Server{
		cfg:      cfg,
		now:      cfg.Now,
		gen:      generator{alertWindow: cfg.AlertUpdateWindow.Milliseconds()},
		accounts: cfg.Accounts,
		streams:  map[streamKey]*stream{},
		auth:     auth,
		limits:   newLimiter(cfg.RateLimit, cfg.RatePeriod),
		stats:    newStatsTable(),
		faults:   newFaults(&cfg),
		rules:    cfg.windowRules(),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.pool.New = func() any { return new(worker) }
	seed := uint64(cfg.Seed)
	for src := sourceID(0); src < numSources; src++ {
		for _, a := range cfg.Accounts {
			s.streams[streamKey{src, strings.ToLower(a)}] = newStream(&cfg, seed, src, a)
		}
	}
	s.streams[streamKey{srcAuditLogs, OrgAccount}] = newStream(&cfg, seed, srcAuditLogs, OrgAccount)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.NoisyFraction > 0 && s.limits.enabled() {
		var keys []bucketKey
		users := map[string]bool{}
		for _, k := range cfg.Keys {
			if k.Role == RoleAccountUser || users[k.User] {
				continue
			}
			users[k.User] = true
			for src := sourceID(0); src < numSources; src++ {
				if !src.info().edge {
					keys = append(keys, bucketKey{k.User, src.info().name})
				}
			}
		}
		keys = append(keys, bucketKey{edgeUser, fnEdge})
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.limits.noisyNeighbour(s.ctx, cfg.NoisyFraction, keys, s.now, s.stats)
		}()
	}
	return s, nil
}

// Start listens on addr (for example "127.0.0.1:0") and serves in the
// background until Close.
func (s *Server) Start(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("apisim: server is closed")
	}
	if s.srv != nil {
		return errors.New("apisim: server already started")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("apisim listen on %s: %w", addr, err)
	}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	s.url = "http://" + ln.Addr().String()
	srv := s.srv
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = srv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return nil
}

// Handler returns the simulator as an http.Handler, for embedding.
func (s *Server) Handler() http.Handler { return s }

// URL returns the core base URL, e.g. http://127.0.0.1:43121, or "" before
// Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// EdgeURL returns the edge base URL: URL() + "/edge".
func (s *Server) EdgeURL() string {
	u := s.URL()
	if u == "" {
		return ""
	}
	return u + "/edge"
}

// Stats returns the counters that GET /_stats serves.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Close stops listening, closes open connections, ends slow responses and
// stops the noisy neighbour. It is safe to call more than once, and without
// Start.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	srv := s.srv
	s.mu.Unlock()
	s.cancel()
	var err error
	if srv != nil {
		err = srv.Close()
	}
	s.wg.Wait()
	return err
}

// stream returns the stream of (src, account); account is case-insensitive.
func (s *Server) stream(src sourceID, account string) *stream {
	return s.streams[streamKey{src, strings.ToLower(account)}]
}

// accountName returns the configured spelling of a case-insensitive account
// name, or false.
func (s *Server) accountName(name string) (string, bool) {
	for _, a := range s.accounts {
		if strings.EqualFold(a, name) {
			return a, true
		}
	}
	return "", false
}

// ServeHTTP routes a request. Paths are case-sensitive (seed); unknown
// paths answer 404 and known paths with another method 405, both with a
// {"message"} body.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/_truth":
		if allow(w, r, http.MethodGet) {
			s.handleTruth(w, r)
		}
		return
	case p == "/_stats":
		if allow(w, r, http.MethodGet) {
			s.handleStats(w, r)
		}
		return
	case p == "/api/v2/access/tokens":
		if allow(w, r, http.MethodPost) {
			s.handleToken(w, r)
		}
		return
	}
	for src := sourceID(0); src < numSources; src++ {
		si := src.info()
		if p == si.path {
			if allow(w, r, si.method) {
				if si.edge {
					s.handleEdge(w, r, src)
				} else {
					s.handleSearch(w, r, src)
				}
			}
			return
		}
		if !si.edge && strings.HasPrefix(p, si.path+pagesPath) {
			if allow(w, r, http.MethodGet) {
				s.handleNextPage(w, r, src, strings.TrimPrefix(p, si.path+pagesPath))
			}
			return
		}
	}
	writeError(w, http.StatusNotFound, "nothing matches the request path "+p)
}

// pagesPath is where next-page URLs live below a search path.
const pagesPath = "/pages/"

func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed here; use "+method)
	return false
}

// Accounts returns the organization's sub-accounts as configured: the
// accounts whose records the edge API serves (C6), each under its own
// account_name.
func (s *Server) Accounts() []string { return append([]string(nil), s.accounts...) }
