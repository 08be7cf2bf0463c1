package apisim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testNow is the fixed start of every test clock.
var testNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// manualClock is a clock tests move by hand (STYLE 12: time is an input).
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *manualClock { return &manualClock{t: testNow} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// harness is a simulator started on loopback with a manual clock, and a
// client of its own.
type harness struct {
	t     testing.TB
	sim   *Server
	clock *manualClock
	http  *http.Client
}

func start(t testing.TB, mutate func(*Config)) *harness {
	t.Helper()
	clock := newClock()
	cfg := DefaultConfig()
	cfg.Now = clock.Now
	if mutate != nil {
		mutate(&cfg)
	}
	sim, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	h := &harness{t: t, sim: sim, clock: clock, http: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := sim.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// reply is a response read in full.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %d body %.200q: %v", r.status, r.body, err)
	}
}

func (r reply) message(t testing.TB) string {
	t.Helper()
	var m struct {
		Message *string `json:"message"`
	}
	r.json(t, &m)
	if m.Message == nil {
		t.Fatalf("error body %q has no message", r.body)
	}
	return *m.Message
}

func (h *harness) do(method, url string, headers map[string]string, body []byte) reply {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		h.t.Fatalf("request: %v", err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("read %s %s: %v", method, url, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// token gets a bearer token for a key (C1).
func (h *harness) token(keyID, secret string, expiry int) string {
	h.t.Helper()
	body := map[string]any{"keyId": keyID}
	if expiry > 0 {
		body["expiryTime"] = expiry
	}
	b, _ := json.Marshal(body)
	r := h.do("POST", h.sim.URL()+"/api/v2/access/tokens",
		map[string]string{"X-SVC-UAKS": secret, "Content-Type": "application/json"}, b)
	if r.status != http.StatusCreated {
		h.t.Fatalf("token: %d %s", r.status, r.body)
	}
	var out struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expiresAt"`
	}
	r.json(h.t, &out)
	return out.Token
}

func (h *harness) adminToken() string { return h.token("sim-key", "sim-secret", 0) }

// search posts a search body to path with bearer tok and extra headers.
func (h *harness) search(path, tok string, extra map[string]string, body any) reply {
	h.t.Helper()
	hd := map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
	for k, v := range extra {
		hd[k] = v
	}
	var b []byte
	switch x := body.(type) {
	case []byte:
		b = x
	case string:
		b = []byte(x)
	default:
		b, _ = json.Marshal(body)
	}
	return h.do("POST", h.sim.URL()+path, hd, b)
}

// get sends a GET with bearer tok and extra headers.
func (h *harness) get(url, tok string, extra map[string]string) reply {
	h.t.Helper()
	hd := map[string]string{"Authorization": "Bearer " + tok}
	for k, v := range extra {
		hd[k] = v
	}
	return h.do("GET", url, hd, nil)
}

// page is a decoded search answer.
type page struct {
	Paging *struct {
		Rows      int64 `json:"rows"`
		TotalRows int64 `json:"totalRows"`
		URLs      struct {
			NextPage string `json:"nextPage"`
		} `json:"urls"`
	} `json:"paging"`
	Data []json.RawMessage `json:"data"`
}

func timeFilter(start, end time.Time) map[string]any {
	return map[string]any{"timeFilter": map[string]string{
		"startTime": start.UTC().Format("2006-01-02T15:04:05.000Z"),
		"endTime":   end.UTC().Format("2006-01-02T15:04:05.000Z"),
	}}
}

// walk follows a chain from its first page to its end and returns every
// record and the pages seen.
func (h *harness) walk(path, tok string, extra map[string]string, body any) (recs []json.RawMessage, pages []page) {
	h.t.Helper()
	r := h.search(path, tok, extra, body)
	for {
		if r.status == http.StatusNoContent {
			if len(r.body) != 0 {
				h.t.Fatalf("204 with a body: %q", r.body)
			}
			return recs, pages
		}
		if r.status != http.StatusOK {
			h.t.Fatalf("page %d: %d %s", len(pages), r.status, r.body)
		}
		var p page
		r.json(h.t, &p)
		pages = append(pages, p)
		recs = append(recs, p.Data...)
		if p.Paging == nil || p.Paging.URLs.NextPage == "" {
			return recs, pages
		}
		r = h.get(p.Paging.URLs.NextPage, tok, extra)
	}
}

// path of a core source's search.
func pathOf(source string) string {
	id, _ := sourceByName(source)
	return id.info().path
}

type jsonRaw = json.RawMessage

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
