package tap

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

func batch(source, account string, n, from int) *record.Batch {
	b := &record.Batch{Source: source, Account: account}
	for i := range n {
		b.Envelopes = append(b.Envelopes, record.Envelope{ID: strings.Repeat("a", 63) + string(rune('0'+(from+i)%10)),
			Source: source, Account: account, Time: time.UnixMilli(int64(from + i)).UTC(), Record: []byte(`{"n":` + itoa(from+i) + `}`)})
	}
	return b
}

func itoa(i int) string { return strconv.Itoa(i) }

// waitClients waits until h has n clients.
func waitClients(t *testing.T, h *Hub, n int32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); h.n.Load() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d taps, want %d", h.n.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A tap gets the envelopes of its source and account only, as the file
// sink's NDJSON lines, up to its limit, over real HTTP.
func TestATapGetsTheEnvelopesOfItsStreamUpToItsLimit(t *testing.T) {
	t.Parallel()
	h := NewHub(func(s string) bool { return s == "dns" || s == "connections" })
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	done := make(chan []string)
	go func() {
		resp, err := http.Get(srv.URL + "?source=dns&account=acme&limit=5")
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		defer resp.Body.Close()
		var lines []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		done <- lines
	}()
	waitClients(t, h, 1)
	h.Publish(batch("connections", "acme", 3, 0)) // another source
	h.Publish(batch("dns", "acme-dev", 3, 0))     // another account
	h.Publish(batch("dns", "acme", 4, 0))
	h.Publish(batch("dns", "acme", 4, 4))
	lines := <-done
	if len(lines) != 5 {
		t.Fatalf("%d lines, want the limit 5: %q", len(lines), lines)
	}
	for _, l := range lines {
		var e struct{ Source, Account string }
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Source != "dns" || e.Account != "acme" {
			t.Errorf("line %q (%v): want an envelope of dns/acme", l, err)
		}
	}
	waitClients(t, h, 0)
}

// A client that does not read never holds a batch back: Publish returns
// at once, the envelopes past the client's buffer are dropped and
// counted; without clients Publish does nothing.
func TestASlowTapDropsAndNeverBlocksThePipeline(t *testing.T) {
	t.Parallel()
	h := NewHub(nil)
	h.Publish(batch("dns", "acme", 10, 0)) // nobody taps
	if h.Dropped() != 0 {
		t.Fatalf("dropped %d with no tap", h.Dropped())
	}
	c, err := h.subscribe(Filter{Source: "dns"})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for i := range 20 {
		h.Publish(batch("dns", "acme", 500, i*500))
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("publishing to a tap that does not read took %v", d)
	}
	if got, want := h.Dropped(), int64(20*500-Buffer); got != want {
		t.Errorf("dropped %d, want %d (all but the buffer)", got, want)
	}
	if len(c.lines) != Buffer {
		t.Errorf("%d lines buffered, want %d", len(c.lines), Buffer)
	}
	h.unsubscribe(c)
}

// Bad asks get a clear answer: no source, an unknown source, a bad limit,
// one tap too many.
func TestTapRefusesBadAsksAndTooManyTaps(t *testing.T) {
	t.Parallel()
	h := NewHub(func(s string) bool { return s == "dns" })
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	for q, want := range map[string]int{"": 400, "?source=nope": 404, "?source=dns&limit=0": 400, "?source=dns&timeout=x": 400} {
		resp, err := http.Get(srv.URL + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%q: %d, want %d", q, resp.StatusCode, want)
		}
	}
	var held []*client
	for range MaxClients {
		c, err := h.subscribe(Filter{Source: "dns"})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	resp, err := http.Get(srv.URL + "?source=dns&timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("tap %d: %d, want 429", MaxClients+1, resp.StatusCode)
	}
	for _, c := range held {
		h.unsubscribe(c)
	}
	// A timeout ends a tap that got nothing.
	resp, err = http.Get(srv.URL + "?source=dns&timeout=200ms")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("timeout tap: %v %v", resp, err)
	}
	resp.Body.Close()
}
