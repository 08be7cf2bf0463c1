package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// replay is an http.RoundTripper that records every answer of a live
// simulator once (next != nil) and then serves the same answers from memory
// (next == nil), so that the in-process benchmarks measure the collector's
// path from page bytes on, without generating data or touching a socket.
// Requests are keyed by method, URL, account headers and body; the bearer
// token is ignored. A request never recorded answers 400, which ends a
// once-mode poller with an error (the benchmark then fails).
type replay struct {
	next   http.RoundTripper
	mu     sync.Mutex
	m      map[string]*answer
	misses atomic.Int64
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func newRecorder() *replay { return &replay{next: http.DefaultTransport, m: map[string]*answer{}} }

// frozen returns a replayer of everything recorded so far.
func (t *replay) frozen() *replay {
	t.mu.Lock()
	defer t.mu.Unlock()
	return &replay{m: t.m}
}

func requestKey(r *http.Request) (string, error) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return "", err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return r.Method + " " + r.URL.String() + "\n" + r.Header.Get("Account-Name") + "|" + r.Header.Get("Org-Access") + "\n" + string(body), nil
}

func (t *replay) RoundTrip(r *http.Request) (*http.Response, error) {
	key, err := requestKey(r)
	if err != nil {
		return nil, err
	}
	if t.next != nil {
		res, err := t.next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		a := &answer{status: res.StatusCode, header: res.Header.Clone(), body: b}
		t.mu.Lock()
		t.m[key] = a
		t.mu.Unlock()
		return a.response(r), nil
	}
	t.mu.Lock()
	a := t.m[key]
	t.mu.Unlock()
	if a == nil {
		t.misses.Add(1)
		a = &answer{status: http.StatusBadRequest, header: http.Header{"Content-Type": {"application/json"}},
			body: []byte(`{"message":"replay: request not recorded"}`)}
	}
	return a.response(r), nil
}

func (a *answer) response(r *http.Request) *http.Response {
	return &http.Response{
		Status: http.StatusText(a.status), StatusCode: a.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: a.header.Clone(), Body: io.NopCloser(bytes.NewReader(a.body)), ContentLength: int64(len(a.body)), Request: r,
	}
}

// fixedClock stops the collector's clock at one instant (the simulator's
// too), so that the windows the pollers plan, and hence every request, are
// the same in every run. After waits in real time: only backoffs use it.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                         { return c.t }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// corpus is a recorded backfill: the simulator's answers, and what the
// pollers made of them (the envelopes of every page, as batches).
type corpus struct {
	sim     *apisim.Server
	now     time.Time
	answers *replay
	batches []*record.Batch
	rows    int64
	bytes   int64 // raw record bytes
	pages   int   // answers served
	srcCfg  catalog.Config
}

var (
	corpusOnce sync.Once
	corpusVal  *corpus
	corpusErr  error
)

// corpusSpan and the simulator's default (production-shaped) rates make
// the in-process backlog: all nine sources of two accounts, about 470,000
// rows.
const corpusSpan = 3 * time.Hour

// sharedCorpus records the backlog once per test binary.
func sharedCorpus(b *testing.B) *corpus {
	b.Helper()
	corpusOnce.Do(func() { corpusVal, corpusErr = recordCorpus() })
	if corpusErr != nil {
		b.Fatal(corpusErr)
	}
	return corpusVal
}

func recordCorpus() (*corpus, error) {
	now := time.Now().UTC().Truncate(time.Hour)
	cfg := apisim.DefaultConfig()
	cfg.Now = func() time.Time { return now }
	cfg.RateLimit = 0 // no bucket and no RateLimit headers: the client's local model paces (generously)
	sim, err := apisim.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := sim.Start("127.0.0.1:0"); err != nil {
		sim.Close()
		return nil, err
	}
	c := &corpus{sim: sim, now: now, srcCfg: inProcessSourceConfig(sim)}
	rec := newRecorder()
	var mu sync.Mutex
	emit := func(_ context.Context, p cursor.Page) error {
		if len(p.Batch.Envelopes) == 0 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		c.batches = append(c.batches, &record.Batch{Source: p.Stream().Source, Account: p.Stream().Account,
			WindowStart: p.Window().Start, WindowEnd: p.Window().End, Page: p.Index(), Envelopes: p.Batch.Envelopes})
		c.rows += int64(len(p.Batch.Envelopes))
		for i := range p.Batch.Envelopes {
			c.bytes += int64(len(p.Batch.Envelopes[i].Record))
		}
		return nil
	}
	if err := pollAll(c.srcCfg, rec, now, nil, emit); err != nil {
		return nil, fmt.Errorf("recording the backlog: %w", err)
	}
	c.answers = rec.frozen()
	c.pages = len(c.answers.m)
	// Records must survive the recorder's buffers: they already do (each
	// envelope's Record is its own copy, made by the page decoder).
	return c, nil
}

// inProcessSourceConfig is the source configuration of the in-process
// benchmarks: all nine sources, two accounts, a corpusSpan backfill, lag
// 2m, and a budget too large to ever wait.
func inProcessSourceConfig(sim *apisim.Server) catalog.Config {
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = sim.URL(), harness.KeyID, secret.New(harness.Secret)
	cfg.Edge.BaseURL, cfg.Edge.Token = sim.EdgeURL(), secret.New(harness.EdgeToken)
	generous := api.RateConfig{Limit: 1 << 30, Period: time.Hour, Reserve: 0.1}
	cfg.API.Rate, cfg.Edge.Rate = generous, generous
	cfg.Accounts = harness.Accounts()
	enabled, start, lag, interval := true, fmt.Sprintf("%dh", int(corpusSpan.Hours())), 2*time.Minute, time.Second
	cfg.Sources = catalog.SourcesConfig{catalog.DefaultSourcesKey: {Enabled: &enabled, Start: &start, Lag: &lag, Interval: catalog.Every(interval)}}
	return cfg
}

// buildSet builds the pollers of cfg (once mode) over transport rt with
// the clock stopped at now; reg receives their metrics (nil: none).
func buildSet(cfg catalog.Config, rt http.RoundTripper, now time.Time, reg prometheus.Registerer) (*source.Set, error) {
	m, err := source.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	am, err := api.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return source.Build(cfg, nil, source.Options{Client: api.Options{
		HTTPClient: &http.Client{Transport: rt},
		Clock:      fixedClock{now},
		Logger:     slog.New(slog.DiscardHandler),
		Metrics:    am,
	}, Metrics: m}, true)
}

// pollAll runs every poller of cfg to completion, concurrently, handing
// pages to emit.
func pollAll(cfg catalog.Config, rt http.RoundTripper, now time.Time, reg prometheus.Registerer, emit source.EmitFunc) error {
	set, err := buildSet(cfg, rt, now, reg)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(set.Pollers))
	for i, p := range set.Pollers {
		wg.Go(func() { errs[i] = p.Run(context.Background(), cursor.Cursor{}, emit) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
