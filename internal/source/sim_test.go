package source

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/clock"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// startSim starts the API simulator on loopback with DefaultConfig changed
// by mut, and closes it when the test ends.
func startSim(t *testing.T, mut func(*apisim.Config)) *apisim.Server {
	t.Helper()
	return simtest.Start(t, func(cfg *apisim.Config) {
		cfg.WaveAmplitude, cfg.BurstProbability = 0, 0
		if mut != nil {
			mut(cfg)
		}
	})
}

// startSimInMemory starts the simulator like startSim, but served over
// in-memory connections (simtest.StartInMemory), for a test that runs in a
// testing/synctest bubble: the simulator, the collector and the test then
// share the bubble's fake clock, so the waits of hours of API time (rate
// limits, next-page lives, intervals, backoffs) take no wall time, only
// the CPU the work takes. Call it inside the bubble; simConfigInMemory is
// the configuration that reaches it, and newEnvOn the env that uses the
// returned client.
func startSimInMemory(t *testing.T, mut func(*apisim.Config)) (*apisim.Server, *http.Client) {
	t.Helper()
	return simtest.StartInMemory(t, func(cfg *apisim.Config) {
		cfg.WaveAmplitude, cfg.BurstProbability = 0, 0
		if mut != nil {
			mut(cfg)
		}
	})
}

// simConfig is the collector configuration for srv: the simulator's
// default credentials, fast retries.
func simConfig(srv *apisim.Server) catalog.Config { return simConfigAt(srv.URL(), srv.EdgeURL()) }

// simConfigInMemory is simConfig for a simulator of startSimInMemory.
func simConfigInMemory() catalog.Config {
	return simConfigAt(simtest.InMemoryURL, simtest.InMemoryURL+"/edge")
}

// simConfigAt is the collector configuration for a simulator whose core
// API is at base and edge API at edge.
func simConfigAt(base, edge string) catalog.Config {
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = base, "sim-key", secret.New("sim-secret")
	cfg.API.Retry = api.RetryConfig{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}
	// A request's timeout is far above what the simulator needs: on a
	// busy machine under -race, a day of edge records of three accounts in
	// one response took more than 10 s, and a test that fails under load
	// is a defect. Tests of timeouts set their own.
	cfg.API.Timeout = time.Minute
	cfg.Edge.BaseURL, cfg.Edge.Token = edge, secret.New("sim-edge-token")
	cfg.Edge.Timeout = time.Minute
	return cfg
}

// env is what a test builds from a configuration: one budget, the
// pollers' and the client's metrics on a private registry, and logs
// captured in a buffer.
type env struct {
	t       *testing.T
	cfg     catalog.Config
	clk     clock.Clock
	budget  *budget.Budget
	reg     *prometheus.Registry
	metrics *Metrics
	logs    *simtest.SyncBuffer
	log     *slog.Logger
	core    *api.Client
	edge    *api.Client
}

func newEnv(t *testing.T, cfg catalog.Config, clk clock.Clock) *env {
	t.Helper()
	return newEnvClient(t, cfg, clk, nil)
}

// newEnvOn is newEnv on the system clock (in a bubble, the bubble's) with
// the clients reaching the simulator through hc, the client of
// startSimInMemory.
func newEnvOn(t *testing.T, cfg catalog.Config, hc *http.Client) *env {
	t.Helper()
	return newEnvClient(t, cfg, nil, hc)
}

// newEnvClient is newEnv with the clients' requests sent through hc (nil:
// a new http.Client).
func newEnvClient(t *testing.T, cfg catalog.Config, clk clock.Clock, hc *http.Client) *env {
	t.Helper()
	if clk == nil {
		clk = clock.System{}
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	am, err := api.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cfg: cfg, clk: clk, reg: reg, metrics: m, logs: &simtest.SyncBuffer{}}
	e.log = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.budget = budget.New(clk, am)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", tail(e.logs.String(), 4000))
		}
	})
	o := api.Options{HTTPClient: hc, Clock: clk, Logger: e.log, Metrics: am}
	if e.core, err = api.NewClient(cfg.API, e.budget, o); err != nil {
		t.Fatal(err)
	}
	if cfg.Edge.BaseURL != "" {
		if e.edge, err = api.NewEdgeClient(cfg.Edge.Connection(), cfg.API, e.budget, o); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// apiMetric returns the value of the client's metric name with the labels
// of pairs (name, value...); 0 when the series is absent.
func (e *env) apiMetric(name string, pairs ...string) float64 {
	e.t.Helper()
	return gathered(e.t, e.reg, name, pairs...)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// poller builds the poller of source for account (the Account-Name sent).
func (e *env) poller(source, account string, once bool) *Poller {
	e.t.Helper()
	return e.newPoller(e.pollerConfig(source, account, once))
}

// pollerConfig is the configuration of the poller of source for account.
func (e *env) pollerConfig(source, account string, once bool) PollerConfig {
	e.t.Helper()
	spec, ok := catalog.LookupSpec(source)
	if !ok {
		e.t.Fatalf("no source %s", source)
	}
	pc := PollerConfig{Spec: spec, Account: account, AccountHeader: account, Settings: e.cfg.Sources.Resolve(source),
		API: e.cfg.API, Edge: e.cfg.Edge, Once: once, Metrics: e.metrics}
	if account == OrgAccountName {
		pc.AccountHeader, pc.OrgAccess = "", true
	}
	return pc
}

// newPoller builds the poller of pc on the env's core or edge client.
func (e *env) newPoller(pc PollerConfig) *Poller {
	e.t.Helper()
	c := e.core
	if pc.Spec.Edge {
		c = e.edge
	}
	p, err := NewPoller(c, pc)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// collector records what a poller emits.
type collector struct {
	mu    sync.Mutex
	pages []cursor.Page
	delay time.Duration // per page, to slow the pipeline down
}

func (c *collector) emit(ctx context.Context, p cursor.Page) error {
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	c.pages = append(c.pages, p)
	c.mu.Unlock()
	return nil
}

func (c *collector) snapshot() []cursor.Page {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cursor.Page(nil), c.pages...)
}

// last returns the cursor after the last page.
func (c *collector) last() cursor.Cursor {
	ps := c.snapshot()
	if len(ps) == 0 {
		return cursor.Cursor{}
	}
	return ps[len(ps)-1].After
}

// runToEnd runs p (a Once poller) from cur to its end into a collector,
// failing t on an error, and returns what it emitted.
func runToEnd(t *testing.T, p *Poller, cur cursor.Cursor) *collector {
	t.Helper()
	col := &collector{}
	if err := p.Run(t.Context(), cur, EmitFunc(col.emit)); err != nil {
		t.Fatal(err)
	}
	return col
}

// checkTruth compares the deduplicated ids of the envelopes emitted with a
// record time in [from, to) with the simulator's ground truth, one day at a
// time (CONTRACT C8).
func checkTruth(t *testing.T, srv *apisim.Server, source, account string, pages []cursor.Page, from, to time.Time) int64 {
	t.Helper()
	if !from.Before(to) {
		t.Fatalf("empty range [%s, %s)", from, to)
	}
	seen := map[string]time.Time{}
	for _, p := range pages {
		for _, e := range p.Batch.Envelopes {
			if e.Source != source || e.Account != account {
				t.Fatalf("envelope of %s/%s in a %s/%s stream", e.Source, e.Account, source, account)
			}
			seen[e.ID] = e.Time
		}
	}
	var total int64
	for ds := from; ds.Before(to); ds = ds.Add(24 * time.Hour) {
		de := ds.Add(24 * time.Hour)
		if de.After(to) {
			de = to
		}
		var d record.Digest
		for id, tm := range seen {
			if !tm.Before(ds) && tm.Before(de) {
				if err := d.Add(id); err != nil {
					t.Fatal(err)
				}
			}
		}
		n, x := srv.Truth(source, account, ds, de)
		if n != d.Count || x != d.Hex() {
			t.Errorf("%s/%s [%s, %s): got %d records (xor %.8s), truth %d (xor %.8s)",
				source, account, record.FormatTime(ds), record.FormatTime(de), d.Count, d.Hex(), n, x)
		}
		total += d.Count
	}
	return total
}

// firstStart returns the start of the first non-revisit window emitted.
func firstStart(pages []cursor.Page) time.Time {
	for _, p := range pages {
		if !p.Revisit {
			return p.Window().Start
		}
	}
	return time.Time{}
}

// simClock runs speed times faster than the wall clock, from the wall
// clock's now, plus a jump the test may add; the simulator and the
// collector share it, so that hours of API time pass in seconds.
type simClock struct {
	base  time.Time
	speed float64
	mu    sync.Mutex
	jump  time.Duration
}

func newSimClock(speed float64) *simClock { return &simClock{base: time.Now(), speed: speed} }

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	j := c.jump
	c.mu.Unlock()
	el := time.Since(c.base)
	return c.base.Add(time.Duration(float64(el)*c.speed) + j)
}

func (c *simClock) After(d time.Duration) <-chan time.Time {
	return time.After(time.Duration(float64(d) / c.speed))
}

func (c *simClock) Jump(d time.Duration) {
	c.mu.Lock()
	c.jump += d
	c.mu.Unlock()
}
