package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
)

// pageServer is a hostile stand-in for the core API, for what the
// simulator cannot do: pages larger than page_rows, one page of every row
// without paging (C3: audit logs), next-page URLs to another origin, bodies
// over max_body_bytes, malformed answers. It serves one search source of
// fixed records: record n has record time times[n] (ascending) and carries
// "n":n, so a test can tell which records arrived.
type pageServer struct {
	srv *httptest.Server
	// times are the records' times, ascending.
	times []time.Time
	// pageSize is the rows per page; 0 answers every row of the window in
	// one page without a paging member.
	pageSize int
	// pad is added to every record, to make bodies large.
	pad string
	// nextBase, when set, returns the scheme and authority of next-page
	// URLs instead of "http://" + Host.
	nextBase func(r *http.Request) string
	// fault, when set, may answer a data request itself (n counts data
	// requests from 1); it reports whether it did.
	fault func(n int64, w http.ResponseWriter, r *http.Request) bool

	n       atomic.Int64 // data requests
	mu      sync.Mutex
	headers []http.Header // of every data request
}

// newPageServer starts a pageServer of the given records; the test ends
// it.
func newPageServer(t *testing.T, times []time.Time, pageSize int, mut func(*pageServer)) *pageServer {
	t.Helper()
	s := &pageServer{times: times, pageSize: pageSize}
	if mut != nil {
		mut(s)
	}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

// spread returns n times from first, step apart.
func spread(first time.Time, n int, step time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = first.Add(time.Duration(i) * step).Truncate(time.Millisecond)
	}
	return out
}

// apiTimeLayout is the milliseconds form of times in the core API's
// requests and answers (seed, C3).
const apiTimeLayout = "2006-01-02T15:04:05.000Z"

func apiTime(t time.Time) string { return t.UTC().Format(apiTimeLayout) }

// searchBody is the part of a core search body the server reads (C3).
type searchBody struct {
	TimeFilter struct {
		StartTime string `json:"startTime"`
		EndTime   string `json:"endTime"`
	} `json:"timeFilter"`
}

func (s *pageServer) requests() int64 { return s.n.Load() }

func (s *pageServer) seen() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

func (s *pageServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("RateLimit-Limit", "100000")
	w.Header().Set("RateLimit-Remaining", "99999")
	w.Header().Set("RateLimit-Reset", "0")
	if r.URL.Path == "/api/v2/access/tokens" {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token":"tok-1","expiresAt":"%s"}`, time.Now().Add(time.Hour).UTC().Format(apiTimeLayout))
		return
	}
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	n := s.n.Add(1)
	if s.fault != nil && s.fault(n, w, r) {
		return
	}
	var start, end time.Time
	offset := 0
	var err error
	if r.URL.Path == "/next" {
		q := r.URL.Query()
		start, err = time.Parse(apiTimeLayout, q.Get("start"))
		if err == nil {
			end, err = time.Parse(apiTimeLayout, q.Get("end"))
		}
		if err == nil {
			offset, err = strconv.Atoi(q.Get("offset"))
		}
	} else {
		var b searchBody
		if err = json.NewDecoder(r.Body).Decode(&b); err == nil {
			start, err = time.Parse(apiTimeLayout, b.TimeFilter.StartTime)
			if err == nil {
				end, err = time.Parse(apiTimeLayout, b.TimeFilter.EndTime)
			}
		}
	}
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"message":%q}`, err.Error())
		return
	}
	lo := sort.Search(len(s.times), func(i int) bool { return !s.times[i].Before(start) })
	hi := sort.Search(len(s.times), func(i int) bool { return !s.times[i].Before(end) })
	if hi <= lo {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	from, to := lo+offset, hi
	if s.pageSize > 0 {
		to = min(from+s.pageSize, hi)
	}
	next := ""
	if s.pageSize > 0 && to < hi {
		base := "http://" + r.Host
		if s.nextBase != nil {
			base = s.nextBase(r)
		}
		next = base + "/next?" + url.Values{"start": {apiTime(start)}, "end": {apiTime(end)}, "offset": {strconv.Itoa(to - lo)}}.Encode()
	}
	write := func(w io.Writer) {
		if s.pageSize > 0 {
			fmt.Fprintf(w, `{"paging":{"rows":%d,"totalRows":%d,"urls":{"nextPage":%q}},"data":[`, to-from, hi-lo, next)
		} else {
			io.WriteString(w, `{"data":[`)
		}
		var buf []byte
		for i := from; i < to; i++ {
			buf = buf[:0]
			if i > from {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"createdTime":"`...)
			buf = s.times[i].UTC().AppendFormat(buf, apiTimeLayout)
			buf = append(buf, `","n":`...)
			buf = strconv.AppendInt(buf, int64(i), 10)
			buf = append(buf, `,"pad":"`...)
			buf = append(buf, s.pad...)
			buf = append(buf, `"}`...)
			w.Write(buf)
		}
		io.WriteString(w, "]}")
	}
	// Sized first, so the client reads into one buffer of the right size,
	// and streamed: the server holds no copy of a large body.
	var cw countingWriter
	write(&cw)
	w.Header().Set("Content-Length", strconv.FormatInt(int64(cw), 10))
	bw := bufio.NewWriterSize(w, 64<<10)
	write(bw)
	bw.Flush()
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// pageServerConfig is the configuration of a poller reading s: fast
// retries, a generous rate, audit_logs and dns starting 24 hours back.
func pageServerConfig(s *pageServer) catalog.Config {
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = s.srv.URL, "k", secret.New("the-secret-value")
	cfg.API.Retry = api.RetryConfig{Initial: time.Millisecond, Max: 5 * time.Millisecond}
	cfg.API.Timeout = 20 * time.Second
	cfg.API.Rate = api.RateConfig{Limit: 100000, Period: time.Second, Reserve: 0.1}
	return cfg
}

// tally receives a poller's pages without keeping their envelopes: it
// marks which records arrived (by their "n") and remembers each page's
// shape, so that memory stays what the poller holds.
type tally struct {
	mu       sync.Mutex
	seen     []bool
	dups     int
	bad      int           // envelopes without "n"
	pages    []cursor.Page // Envelopes dropped; Index, Window, After, Revisit kept
	sizes    []int         // len(Envelopes) of each page
	reserved []int         // rows asked of Reserve, in order
}

func newTally(n int) *tally { return &tally{seen: make([]bool, n)} }

// Emit records the page (Output).
func (c *tally) Emit(_ context.Context, p cursor.Page) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range p.Batch.Envelopes {
		n, ok := recordN(e.Record)
		if !ok || n >= len(c.seen) {
			c.bad++
			continue
		}
		if c.seen[n] {
			c.dups++
		}
		c.seen[n] = true
	}
	c.sizes = append(c.sizes, len(p.Batch.Envelopes))
	p.Batch.Envelopes = nil
	c.pages = append(c.pages, p)
	return nil
}

// Reserve records the rows asked for (Output).
func (c *tally) Reserve(_ context.Context, rows int) error {
	c.mu.Lock()
	c.reserved = append(c.reserved, rows)
	c.mu.Unlock()
	return nil
}

// missing returns how many records never arrived.
func (c *tally) missing() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := 0
	for _, ok := range c.seen {
		if !ok {
			m++
		}
	}
	return m
}

func (c *tally) snapshot() ([]cursor.Page, []int, []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cursor.Page(nil), c.pages...), append([]int(nil), c.sizes...), append([]int(nil), c.reserved...)
}

// recordN reads the "n" member the pageServer puts in every record.
func recordN(raw []byte) (int, bool) {
	i := bytes.Index(raw, []byte(`"n":`))
	if i < 0 {
		return 0, false
	}
	j := i + 4
	for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(string(raw[i+4 : j]))
	return n, err == nil
}

// slogTo is a text logger at DEBUG writing to w.
func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// stepClock is a Clock that moves only when told; After fires at once.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.Now().Add(d)
	return ch
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
