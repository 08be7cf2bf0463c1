package apisim

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// C5: error_rate answers some data requests 500 or 503, the same way for
// the same seed, and a retried request can succeed.
func TestC5InjectedServerErrorsAreReproducible(t *testing.T) {
	run := func() []int {
		h := start(t, func(c *Config) { c.ErrorRate = 0.4; c.Seed = 99 })
		tok := h.adminToken()
		var codes []int
		for i := 0; i < 40; i++ {
			r := h.search(pathOf(SourceAuditLogs), tok, nil, timeFilter(testNow.Add(-time.Hour), testNow))
			codes = append(codes, r.status)
			if r.status >= 500 {
				r.message(t)
			}
		}
		if got := h.sim.Stats().Get("sim-admin", SourceAuditLogs).ServerErrors; got != int64(count(codes, 500)+count(codes, 503)) {
			t.Fatalf("server_errors %d, codes %v", got, codes)
		}
		return codes
	}
	a, b := run(), run()
	if strings.Join(strs(a), ",") != strings.Join(strs(b), ",") {
		t.Fatalf("runs differ:\n%v\n%v", a, b)
	}
	if count(a, 500) == 0 || count(a, 503) == 0 || count(a, 200) == 0 {
		t.Fatalf("codes %v: want 200, 500 and 503", a)
	}
}

func count(xs []int, v int) int {
	n := 0
	for _, x := range xs {
		if x == v {
			n++
		}
	}
	return n
}

func strs(xs []int) []string {
	var out []string
	for _, x := range xs {
		out = append(out, strconv.Itoa(x))
	}
	return out
}

// C5: a cut-off body declares the full Content-Length, stops mid-JSON and
// closes the connection; the client sees an unexpected EOF.
func TestC5CutOffBodies(t *testing.T) {
	h := start(t, func(c *Config) { c.CutRate = 1 })
	tok := h.adminToken()
	req, _ := http.NewRequest("POST", h.sim.URL()+pathOf(SourceDNS), strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read: %v after %d bytes", err, len(b))
	}
	if resp.ContentLength <= int64(len(b)) || !strings.HasPrefix(string(b), `{"paging"`) {
		t.Fatalf("Content-Length %d, got %d bytes", resp.ContentLength, len(b))
	}
}

// C5: slow_rate delays data responses by slow_delay.
func TestC5SlowResponses(t *testing.T) {
	h := start(t, func(c *Config) { c.SlowRate = 1; c.SlowDelay = 300 * time.Millisecond })
	tok := h.adminToken()
	began := time.Now()
	if r := h.search(pathOf(SourceDNS), tok, nil, timeFilter(testNow.Add(-time.Minute), testNow)); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	if d := time.Since(began); d < 300*time.Millisecond {
		t.Fatalf("answered in %v", d)
	}
}
