package tap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// batch is n envelopes of source/account, numbered from from; pad makes
// each record that much larger.
func batch(source, account string, n, from, pad int) *record.Batch {
	b := &record.Batch{Source: source, Account: account}
	for i := range n {
		raw := fmt.Sprintf(`{"n":%d,"pad":%q}`, from+i, strings.Repeat("x", pad))
		id, _ := record.ID(source, []byte(raw))
		b.Envelopes = append(b.Envelopes, record.Envelope{ID: id, Source: source, Account: account,
			Time: time.UnixMilli(int64(from + i)).UTC(), Record: []byte(raw)})
	}
	return b
}

// waitClients waits until h has n clients (a tap subscribes before its
// response's header is sent, which Read does not show).
func waitClients(t *testing.T, h *Hub, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); h.Clients() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d taps, want %d", h.Clients(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// open starts a tap over HTTP and returns once the Hub holds it (the
// response's header came).
func open(t *testing.T, srv *httptest.Server, q url.Values) *http.Response {
	t.Helper()
	resp, err := http.Get(srv.URL + "/tap?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tap %v: %s", q, resp.Status)
	}
	return resp
}

func serve(t *testing.T, h *Hub) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/tap", h.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A tap gets the envelopes of its source and account only, as the C7
// envelope lines a file sink holds, up to its limit, over real HTTP; the
// trailers say it ended at its limit and lost nothing.
func TestATapGetsTheEnvelopesOfItsStreamUpToItsLimit(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{Streams: []record.Stream{{Source: "dns", Account: "acme"}, {Source: "dns", Account: "acme-dev"}, {Source: "connections", Account: "acme"}}})
	srv := serve(t, h)
	type got struct {
		res Result
		out string
		err error
	}
	done := make(chan got)
	go func() {
		var out bytes.Buffer
		res, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "dns", Account: "acme", Limit: 5}, &out)
		done <- got{res, out.String(), err}
	}()
	waitClients(t, h, 1)
	h.Publish(batch("connections", "acme", 3, 0, 0)) // another source
	h.Publish(batch("dns", "acme-dev", 3, 0, 0))     // another account
	h.Publish(batch("dns", "acme", 4, 0, 0))
	h.Publish(batch("dns", "acme", 4, 4, 0))
	g := <-done
	if g.err != nil || g.res != (Result{Envelopes: 5, End: EndLimit}) {
		t.Fatalf("Read = %+v, %v; want 5 envelopes, ended at the limit, none dropped", g.res, g.err)
	}
	want := batch("dns", "acme", 5, 0, 0)
	lines := strings.Split(strings.TrimSuffix(g.out, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want the limit 5: %q", len(lines), lines)
	}
	for i, l := range lines {
		if w := string(want.Envelopes[i].AppendNDJSON(nil)); l+"\n" != w {
			t.Errorf("line %d = %s, want the envelope's NDJSON line %s", i, l, w)
		}
	}
	waitClients(t, h, 0)
}

// A client that does not read never holds a batch back: Publish returns
// at once, what is past the client's buffer is dropped and counted, and
// every envelope offered is either buffered or counted; without a tap,
// Publish does nothing.
func TestASlowTapDropsAndNeverBlocksThePipeline(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{})
	h.Publish(batch("dns", "acme", 10, 0, 0)) // nobody taps
	if h.Dropped() != 0 {
		t.Fatalf("dropped %d with no tap", h.Dropped())
	}
	c, err := h.subscribe(Request{Source: "dns"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.unsubscribe(c)
	b := batch("dns", "acme", 500, 0, 0)
	began := time.Now()
	for range 20 {
		h.Publish(b)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("publishing to a tap that does not read took %v", d)
	}
	if got, want := h.Dropped(), int64(20*500-Buffer); got != want || c.dropped.Load() != want {
		t.Errorf("dropped %d (client %d), want %d: all but the buffer", got, c.dropped.Load(), want)
	}
	if len(c.lines) != Buffer {
		t.Errorf("%d lines buffered, want %d", len(c.lines), Buffer)
	}
}

// The same over a real connection whose reader stopped reading: the
// handler blocks on the socket, Publish does not, and the tap's lost
// envelopes are counted.
func TestATapThatStopsReadingOverHTTPNeverBlocksPublish(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{})
	srv := serve(t, h)
	resp := open(t, srv, Request{Source: "dns", Limit: MaxLimit}.Query())
	defer resp.Body.Close()
	b := batch("dns", "acme", 200, 0, 2000) // 400 kB a batch: the socket's buffers fill
	published := make(chan time.Duration)
	go func() {
		began := time.Now()
		for range 50 {
			h.Publish(b)
		}
		published <- time.Since(began)
	}()
	select {
	case d := <-published:
		t.Logf("50 batches of 200 envelopes published in %v to a tap that does not read", d)
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a tap that does not read")
	}
	if h.Dropped() == 0 {
		t.Error("nothing dropped for a tap that read nothing of 20 MB")
	}
}

// Sample sends an evenly spread share of the envelopes: 0.1 is every
// tenth, exactly.
func TestASampledTapGetsAnEvenShare(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{})
	c, err := h.subscribe(Request{Source: "dns", Sample: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.unsubscribe(c)
	for i := range 10 {
		h.Publish(batch("dns", "acme", 100, i*100, 0))
	}
	if len(c.lines) != 100 || h.Dropped() != 0 {
		t.Fatalf("%d lines, %d dropped; want 100 of 1000 with sample 0.1", len(c.lines), h.Dropped())
	}
	for i := range 100 {
		var e struct{ Record struct{ N int } }
		if err := json.Unmarshal(<-c.lines, &e); err != nil || e.Record.N != i*10+9 {
			t.Fatalf("sampled line %d is record %d (%v), want %d", i, e.Record.N, err, i*10+9)
		}
	}
}

// Close ends the taps at once (their stream says the collector stops, so
// `collector tap` exits 1 instead of hanging, and the telemetry server's
// shutdown is not held up) and refuses new ones.
func TestCloseEndsEveryTapAndRefusesNewOnes(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{})
	srv := serve(t, h)
	errc := make(chan error)
	go func() {
		_, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "dns"}, io.Discard)
		errc <- err
	}()
	waitClients(t, h, 1)
	h.Close()
	h.Close() // safe twice
	select {
	case err := <-errc:
		if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "stopping") {
			t.Errorf("a tap open at Close: %v, want ErrStopped saying the collector stops", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a tap outlived Close")
	}
	_, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "dns"}, io.Discard)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "stopping") {
		t.Errorf("a tap after Close: %v, want refused, stopping", err)
	}
}

// Bad asks get a clear answer: no source, an unknown source, a bad
// limit, sample or timeout, a POST, one tap too many.
func TestTapRefusesBadAsksAndTooManyTaps(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{Streams: []record.Stream{{Source: "dns", Account: "acme"}}})
	srv := serve(t, h)
	for q, want := range map[string]int{
		"":                          400,
		"?source=nope":              404,
		"?source=dns&limit=0":       400,
		"?source=dns&limit=100001":  400,
		"?source=dns&sample=0":      400,
		"?source=dns&sample=1.5":    400,
		"?source=dns&sample=NaN":    400,
		"?source=dns&timeout=x":     400,
		"?source=dns&timeout=-1s":   400,
		"?source=dns&timeout=200ms": 200, // ends with its timeout, empty
	} {
		resp, err := http.Get(srv.URL + "/tap" + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%q: %d %s, want %d", q, resp.StatusCode, body, want)
		}
	}
	if resp, err := http.Post(srv.URL+"/tap?source=dns", "text/plain", nil); err != nil || resp.StatusCode != 405 {
		t.Errorf("POST: %v %v, want 405", resp, err)
	} else {
		resp.Body.Close()
	}
	_, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "nope"}, io.Discard)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `source "nope" is not collected`) {
		t.Errorf("unknown source: %v", err)
	}
	var held []*http.Response
	for range MaxClients {
		held = append(held, open(t, srv, Request{Source: "dns"}.Query()))
	}
	_, err = Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "dns", Timeout: time.Second}, io.Discard)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "too many taps") {
		t.Errorf("tap %d: %v, want refused, too many", MaxClients+1, err)
	}
	for _, r := range held {
		r.Body.Close()
	}
	waitClients(t, h, 0)
	res, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "dns", Timeout: 100 * time.Millisecond}, io.Discard)
	if err != nil || res.End != EndTimeout {
		t.Errorf("a tap with a timeout and nothing delivered: %+v, %v; want ended by its timeout", res, err)
	}
}

// Read says when no collector answers, and an interrupt (its context) is
// a clean end.
func TestReadSaysUnreachableAndEndsCleanlyOnInterrupt(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	if _, err := Read(t.Context(), nil, base, secret.Secret{}, Request{Source: "dns"}, io.Discard); !errors.Is(err, ErrUnreachable) {
		t.Errorf("no collector: %v, want ErrUnreachable", err)
	}
	h := NewHub(Options{})
	srv2 := serve(t, h)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	var res Result
	var err error
	go func() {
		defer close(done)
		res, err = Read(ctx, nil, srv2.URL, secret.Secret{}, Request{Source: "dns"}, io.Discard)
	}()
	waitClients(t, h, 1)
	h.Publish(batch("dns", "acme", 3, 0, 0))
	cancel()
	<-done
	if err != nil || res.End != EndInterrupted {
		t.Errorf("interrupted: %+v, %v; want a clean end", res, err)
	}
	waitClients(t, h, 0)
}

// Publishers on every sink worker, and taps coming and going, share the
// Hub safely (run with -race); every envelope offered to a tap is either
// sent or counted as dropped.
func TestConcurrentPublishersAndTaps(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{})
	srv := serve(t, h)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			b := batch("dns", fmt.Sprint("acct", w), 50, 0, 0)
			for {
				select {
				case <-stop:
					return
				default:
					h.Publish(b)
				}
			}
		})
	}
	for range 3 {
		var out bytes.Buffer
		res, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, Request{Source: "dns", Limit: 2000}, &out)
		if err != nil || res.Envelopes != 2000 || res.End != EndLimit {
			t.Fatalf("tap beside 4 publishers: %+v, %v", res, err)
		}
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			var e struct{ ID, Source string }
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Source != "dns" || len(e.ID) != 64 {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
		}
	}
	close(stop)
	wg.Wait()
}

// tenantBatch is batch for tenant: the same records, byte for byte (same
// ids), as every other tenant's.
func tenantBatch(tenant, source, account string, n int) *record.Batch {
	b := batch(source, account, n, 0, 0)
	b.Tenant = tenant
	for i := range b.Envelopes {
		b.Envelopes[i].Tenant = tenant
	}
	return b
}

// Issue 32: a tap of one tenant (--tenant) gets that tenant's envelopes
// only, though another tenant's are byte-identical records of the same
// source and account; a tap without it gets every tenant's, each line
// naming its tenant; a tenant the collector does not have is refused at
// once, naming those it has.
func TestATapOfOneTenantGetsItsEnvelopesOnly(t *testing.T) {
	t.Parallel()
	h := NewHub(Options{Streams: []record.Stream{{Tenant: "acme-corp", Source: "dns", Account: "acme"}, {Tenant: "globex", Source: "dns", Account: "acme"}}})
	srv := serve(t, h)
	type got struct {
		out string
		err error
	}
	read := func(req Request) <-chan got {
		done := make(chan got, 1)
		go func() {
			var out bytes.Buffer
			_, err := Read(t.Context(), nil, srv.URL, secret.Secret{}, req, &out)
			done <- got{out.String(), err}
		}()
		return done
	}
	one := read(Request{Source: "dns", Tenant: "globex", Limit: 3})
	all := read(Request{Source: "dns", Limit: 6})
	waitClients(t, h, 2)
	h.Publish(tenantBatch("acme-corp", "dns", "acme", 3))
	h.Publish(tenantBatch("globex", "dns", "acme", 3))
	g := <-one
	if g.err != nil {
		t.Fatal(g.err)
	}
	want := tenantBatch("globex", "dns", "acme", 3)
	var w strings.Builder
	for _, e := range want.Envelopes {
		w.Write(e.AppendNDJSON(nil))
	}
	if g.out != w.String() {
		t.Errorf("tap of tenant globex:\n%s\nwant its envelopes only:\n%s", g.out, w.String())
	}
	g = <-all
	if g.err != nil {
		t.Fatal(g.err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(g.out, "\n"), "\n") {
		var e struct{ Tenant string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		n[e.Tenant]++
	}
	if n["acme-corp"] != 3 || n["globex"] != 3 || len(n) != 2 {
		t.Errorf("tap of every tenant: lines by tenant %v, want 3 of each, each naming its tenant", n)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := Read(ctx, nil, srv.URL, secret.Secret{}, Request{Source: "dns", Tenant: "globx"}, io.Discard)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `tenant "globx" is not a tenant of this collector (did you mean "globex"?); its tenants: acme-corp, globex`) {
		t.Errorf("tap of an unknown tenant: %v", err)
	}
}
