// Package tap lets an operator peek at what the running collector
// delivers, without a request to the API (like `vector tap`): the
// pipeline publishes every batch once every sink acknowledged it, and the
// clients of the telemetry server's /tap endpoint (`collector tap`)
// receive its envelopes, of the source and account they asked for, as
// NDJSON (the file sink's lines). A tap never slows the pipeline: with no
// client, Publish costs one atomic load; a client that reads slower than
// the collector delivers loses envelopes (counted, and said at the end of
// its stream), never holds a batch back. It imports only record.
package tap

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// Defaults of a Hub.
const (
	// MaxClients is how many taps may run at once; more are refused
	// (429), so that taps cannot pile up on a busy collector.
	MaxClients = 4
	// Buffer is how many envelopes a client may lag behind before the
	// next ones are dropped for it.
	Buffer = 1024
	// DefaultLimit is how many envelopes a tap gets when it asks for no
	// limit; MaxLimit the most it may ask for.
	DefaultLimit = 100
	MaxLimit     = 100_000
)

// Filter selects the envelopes of a tap: a source (required) and an
// account ("" every account).
type Filter struct {
	Source, Account string
}

func (f Filter) match(b *record.Batch) bool {
	return b.Source == f.Source && (f.Account == "" || b.Account == f.Account)
}

// Hub fans delivered batches out to the taps. Create it with NewHub; it
// is safe for concurrent use.
type Hub struct {
	known func(source string) bool

	n       atomic.Int32 // clients, read without the lock by Publish
	mu      sync.Mutex
	clients map[*client]struct{}
	dropped atomic.Int64
}

type client struct {
	f       Filter
	lines   chan []byte
	dropped atomic.Int64
}

// NewHub returns a Hub whose taps may ask for the sources known accepts
// (nil: any).
func NewHub(known func(source string) bool) *Hub {
	return &Hub{known: known, clients: map[*client]struct{}{}}
}

// Dropped is how many envelopes were dropped for taps that read too
// slowly, over the Hub's life.
func (h *Hub) Dropped() int64 { return h.dropped.Load() }

// Publish offers b, acknowledged by every sink, to the taps; it never
// blocks.
func (h *Hub) Publish(b *record.Batch) {
	if h == nil || h.n.Load() == 0 || len(b.Envelopes) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		if !c.f.match(b) {
			continue
		}
		for i := range b.Envelopes {
			select {
			case c.lines <- b.Envelopes[i].AppendNDJSON(nil):
			default:
				c.dropped.Add(1)
				h.dropped.Add(1)
			}
		}
	}
}

// ErrTooMany is Subscribe's error when MaxClients taps run already.
var ErrTooMany = errors.New("too many taps at once")

func (h *Hub) subscribe(f Filter) (*client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.clients) >= MaxClients {
		return nil, ErrTooMany
	}
	c := &client{f: f, lines: make(chan []byte, Buffer)}
	h.clients[c] = struct{}{}
	h.n.Store(int32(len(h.clients)))
	return c, nil
}

func (h *Hub) unsubscribe(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, c)
	h.n.Store(int32(len(h.clients)))
}

// Handler serves GET ?source=S[&account=A][&limit=N][&timeout=D]: the
// next N (DefaultLimit) envelopes of S delivered, one NDJSON line each,
// flushed as they come, until N were sent, the timeout (none by default)
// passed or the client went away. When envelopes were dropped for the
// client, a last line {"tap_dropped":K} says how many.
func (h *Hub) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		f := Filter{Source: q.Get("source"), Account: q.Get("account")}
		if f.Source == "" {
			http.Error(w, "source is required: /tap?source=dns[&account=A][&limit=N]", http.StatusBadRequest)
			return
		}
		if h.known != nil && !h.known(f.Source) {
			http.Error(w, fmt.Sprintf("source %q is not collected by this collector", f.Source), http.StatusNotFound)
			return
		}
		limit := DefaultLimit
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > MaxLimit {
				http.Error(w, fmt.Sprintf("limit %q: want 1 to %d", s, MaxLimit), http.StatusBadRequest)
				return
			}
			limit = n
		}
		var timeout <-chan time.Time
		if s := q.Get("timeout"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				http.Error(w, fmt.Sprintf("timeout %q: want a positive duration", s), http.StatusBadRequest)
				return
			}
			tm := time.NewTimer(d)
			defer tm.Stop()
			timeout = tm.C
		}
		c, err := h.subscribe(f)
		if err != nil {
			http.Error(w, err.Error(), http.StatusTooManyRequests)
			return
		}
		defer h.unsubscribe(c)
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		fl, _ := w.(http.Flusher)
		if fl != nil {
			fl.Flush()
		}
		defer func() {
			if n := c.dropped.Load(); n > 0 {
				fmt.Fprintf(w, "{\"tap_dropped\":%d}\n", n)
			}
		}()
		for sent := 0; sent < limit; sent++ {
			select {
			case line := <-c.lines:
				if _, err := w.Write(line); err != nil {
					return
				}
				if fl != nil && len(c.lines) == 0 {
					fl.Flush()
				}
			case <-timeout:
				return
			case <-r.Context().Done():
				return
			}
		}
	})
}
