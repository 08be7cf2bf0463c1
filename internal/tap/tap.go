// Package tap lets an operator peek at what the running collector
// delivers, without a request to the API (like `vector tap`): the
// pipeline publishes every batch once every sink acknowledged it, and the
// clients of the telemetry server's /tap endpoint (`collector tap`, Read)
// receive its envelopes, of the source and account they asked for, as
// NDJSON (the file sink's lines).
//
// A tap never slows the pipeline. With no client, Publish costs one
// atomic load. With clients, it encodes only the envelopes a client has
// room for and hands them over without waiting: a client that reads slower
// than the collector delivers loses envelopes (counted: Dropped, the
// Tap-Dropped trailer of its stream), never holds a batch back. At most
// MaxClients taps run at once, each holding at most Buffer envelopes, so
// taps add a bounded amount of memory; and a client that stops reading
// altogether is dropped once a write to it has waited Options.Stall, so it
// cannot hold one of the MaxClients places for long.
//
// Records are data: a Hub serves what the collector collects only
// (Options.Streams; anything else is refused at once, naming what is), and
// only to a client that sends the bearer token of Options.TokenFile, when
// set. The collector serves /tap only when metrics.tap.enabled says so. It
// imports only record, and secret to read the token file.
//
// The stream of a tap is the envelopes only, one a line; how it ended
// (limit, timeout, stopping) and how many envelopes it lost are HTTP
// trailers (Tap-End, Tap-Dropped), so that its body stays what a file sink
// would hold.
package tap

import (
	"errors"
	"fmt"
	"log/slog"
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
	// DefaultStall is Options.Stall's default: a client whose socket
	// takes no byte for this long is no longer reading.
	DefaultStall = 10 * time.Second
)

// Options configure a Hub. The zero value serves any source to anyone.
type Options struct {
	// Streams are the streams the collector reads: a tap of another
	// source, or of an account the source is not read for, is refused at
	// once (404) with the list of what is collected. None: any.
	Streams []record.Stream
	// TokenFile holds the bearer token a tap must send (ReadToken); it
	// is read at every tap, so a rotated token applies to the next one.
	// "" asks for none: the configuration allows that only on a loopback
	// address (config: metrics.tap).
	TokenFile string
	// Stall is how long one write to a client may wait for its socket
	// before the tap ends (the client stopped reading: it would hold its
	// place until it left). 0 is DefaultStall.
	Stall time.Duration
	// Log receives why a tap's token file cannot be read; nil: none.
	Log *slog.Logger
}

// Trailers of a tap's stream, and the values of TrailerEnd.
const (
	TrailerDropped = "Tap-Dropped" // envelopes the client was too slow for
	TrailerEnd     = "Tap-End"     // why the stream ended: an End value

	EndLimit    = "limit"    // the envelopes asked for were sent
	EndTimeout  = "timeout"  // the request's timeout passed
	EndStopping = "stopping" // the collector is stopping (Close)
)

// Hub fans delivered batches out to the taps. Create it with NewHub; it
// is safe for concurrent use.
type Hub struct {
	collected atomic.Pointer[collected] // SetStreams replaces it
	tokenFile string
	stall     time.Duration
	log       *slog.Logger

	n       atomic.Int32 // clients, read without the lock by Publish
	mu      sync.RWMutex // Publish reads clients, (un)subscribe write them
	clients map[*client]struct{}
	closed  bool
	stop    chan struct{} // closed by Close
	dropped atomic.Int64
}

type client struct {
	req     Request
	lines   chan []byte
	offered atomic.Uint64 // envelopes of its stream offered, for Sample
	dropped atomic.Int64
}

func (c *client) match(b *record.Batch) bool {
	return b.Source == c.req.Source && (c.req.Account == "" || b.Account == c.req.Account) &&
		(c.req.Tenant == "" || b.Tenant == c.req.Tenant)
}

// takes says whether the n-th envelope (from 1) offered to c is in its
// sample: exactly a share Sample of them, evenly spread.
func (c *client) takes(n uint64) bool {
	r := c.req.Sample
	if r == 0 || r >= 1 {
		return true
	}
	return uint64(float64(n)*r) > uint64(float64(n-1)*r)
}

// NewHub returns a Hub serving taps as o says.
func NewHub(o Options) *Hub {
	if o.Stall <= 0 {
		o.Stall = DefaultStall
	}
	h := &Hub{tokenFile: o.TokenFile, stall: o.Stall, log: o.Log,
		clients: map[*client]struct{}{}, stop: make(chan struct{})}
	h.SetStreams(o.Streams)
	return h
}

// SetStreams makes streams what new taps may ask for (Options.Streams),
// after a configuration reload changed them; running taps go on.
func (h *Hub) SetStreams(streams []record.Stream) {
	c := newCollected(streams)
	h.collected.Store(&c)
}

// Dropped is how many envelopes were dropped for taps that read too
// slowly, over the Hub's life.
func (h *Hub) Dropped() int64 { return h.dropped.Load() }

// Clients is how many taps run now.
func (h *Hub) Clients() int { return int(h.n.Load()) }

// Publish offers b, acknowledged by every sink, to the taps. It never
// blocks and keeps no reference to b: what a tap has room for is encoded
// now, once for all the taps that take it (they only read the line), the
// rest is dropped (counted). It may be called concurrently.
func (h *Hub) Publish(b *record.Batch) {
	if h == nil || h.n.Load() == 0 || len(b.Envelopes) == 0 {
		return
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	var lines [][]byte // envelope i's line, encoded at its first taker
	line := func(i int) []byte {
		if lines == nil {
			lines = make([][]byte, len(b.Envelopes))
		}
		if lines[i] == nil {
			lines[i] = b.Envelopes[i].AppendNDJSON(nil)
		}
		return lines[i]
	}
	for c := range h.clients {
		if !c.match(b) {
			continue
		}
		var lost int64
		for i := range b.Envelopes {
			if !c.takes(c.offered.Add(1)) {
				continue
			}
			if len(c.lines) == cap(c.lines) {
				lost++ // no room: not even encoded
				continue
			}
			select {
			case c.lines <- line(i):
			default:
				lost++ // another publisher filled the room meanwhile
			}
		}
		if lost > 0 {
			c.dropped.Add(lost)
			h.dropped.Add(lost)
		}
	}
}

// Close ends every tap (their streams end with Tap-End: stopping) and
// refuses new ones; the collector calls it when it stops, so that no tap
// holds the telemetry server's shutdown. Safe twice.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.stop)
	}
}

var (
	errTooMany  = fmt.Errorf("too many taps at once (at most %d)", MaxClients)
	errStopping = errors.New("the collector is stopping")
)

func (h *Hub) subscribe(req Request) (*client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errStopping
	}
	if len(h.clients) >= MaxClients {
		return nil, errTooMany
	}
	c := &client{req: req, lines: make(chan []byte, Buffer)}
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

// Handler serves GET with the query of a Request (Request.Query), and
// the bearer token of Options.TokenFile when set (401 without it or with
// another): the next Limit envelopes of the source (and account)
// delivered, in the sample asked for, one NDJSON line each, flushed as
// they come, until Limit were sent, the timeout (none by default) passed,
// the collector stops (Close), the client goes away or stops reading (a
// write waited Options.Stall). The trailers say how it ended and how many
// envelopes the client was too slow for. A source or account the collector
// does not collect is refused at once (404), naming what it collects.
func (h *Hub) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		// The token first: who has none learns nothing, not even what is
		// collected.
		if h.tokenFile != "" {
			want, err := ReadToken(h.tokenFile)
			if err != nil {
				if h.log != nil {
					h.log.Error("tap refused: its token file cannot be used", "key", "metrics.tap.token_file", "err", err)
				}
				http.Error(w, "the collector cannot read its tap token (metrics.tap.token_file): see its log", http.StatusServiceUnavailable)
				return
			}
			if err := authorize(r, want); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="collector tap"`)
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
		}
		req, err := ParseRequest(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := h.collected.Load().check(req); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		c, err := h.subscribe(req)
		switch {
		case errors.Is(err, errTooMany):
			http.Error(w, err.Error(), http.StatusTooManyRequests)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer h.unsubscribe(c)
		var timeout <-chan time.Time
		if req.Timeout > 0 {
			tm := time.NewTimer(req.Timeout)
			defer tm.Stop()
			timeout = tm.C
		}
		// Every write may wait Stall for the client's socket, no longer: a
		// client that stopped reading fails it and frees its place. The
		// deadline is set before each write, so a quiet stream (no
		// envelope for an hour) is not cut.
		rc := http.NewResponseController(w)
		deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(h.stall)) }
		hd := w.Header()
		hd.Set("Content-Type", "application/x-ndjson")
		hd.Set("Cache-Control", "no-store")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Trailer", TrailerEnd+", "+TrailerDropped)
		deadline()
		w.WriteHeader(http.StatusOK)
		// The client knows the tap runs before the first envelope.
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return
		}
		end := EndLimit
	loop:
		for sent := 0; sent < req.Limit; sent++ {
			select {
			case line := <-c.lines:
				deadline()
				if _, err := w.Write(line); err != nil {
					return // the client went away or stopped reading
				}
				if len(c.lines) == 0 {
					if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
						return
					}
				}
			case <-timeout:
				end = EndTimeout
				break loop
			case <-h.stop:
				end = EndStopping
				break loop
			case <-r.Context().Done():
				return
			}
		}
		deadline() // the trailers, written after the handler returns
		hd.Set(TrailerEnd, end)
		hd.Set(TrailerDropped, strconv.FormatInt(c.dropped.Load(), 10))
	})
}

// Off is the handler of /tap when metrics.tap.enabled is false: 404, saying
// how to turn it on, so that `collector tap` tells the operator why.
func Off() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the tap is off in this collector's configuration: set metrics.tap.enabled: true and metrics.tap.token_file", http.StatusNotFound)
	})
}
