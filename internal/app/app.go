package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/backoff"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/pipeline"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/status"
	"github.com/svcexport/collector/internal/tap"
	"github.com/svcexport/collector/internal/telemetry"
)

// Options are the process-level inputs of the commands.
type Options struct {
	// Log receives every log line; nil discards.
	Log *slog.Logger
	// Stdout is where the stdout sink and command output go.
	Stdout io.Writer
	// Version and Commit stamp collector_build_info.
	Version, Commit string
	// Progress, when set, shows each source's progress while Run runs (the
	// terminal's bars, status.Bars); Run closes it before its last line.
	Progress status.Display
	// Reload, when set, reads and validates the configuration again as
	// the start did (same file, same environment); Run applies what it
	// returns at every value of Reloads (SIGHUP) and at every POST
	// /-/reload (metrics.reload). nil: Run never reloads.
	Reload func() (config.Config, error)
	// Reloads receives a value for every SIGHUP.
	Reloads <-chan struct{}
}

func (o Options) withDefaults() Options {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	return o
}

// Run runs the daemon until ctx ends (a stop) or, with once, until every
// stream caught up with now - lag. It returns nil after a clean stop.
func Run(ctx context.Context, cfg config.Config, o Options, once bool) error {
	o = o.withDefaults()
	log := o.Log
	if sh, ok := cfg.Sharding(); ok && sh.Empty() {
		return runEmptyShard(ctx, cfg, o, sh, once)
	}

	srcCfgs, sim, err := resolveSources(cfg, log)
	if err != nil {
		return err
	}
	if sim != nil {
		defer sim.Close()
	}

	// The checks `collector check` makes of the same configuration: a
	// checkpoint path that is no checkpoint, a sink that cannot be built.
	streams := tenantStreams(srcCfgs)
	if err := runPreflight(cfg, streams).err(); err != nil {
		return err
	}

	store, err := openCheckpoint(cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()

	// Everything that registers metrics is built before the telemetry
	// server answers, so that its first scrape already holds every known
	// series at 0 (the sinks' errors, the streams' deliveries and
	// backlog); building does no I/O with a destination.
	reg := telemetry.NewRegistry(o.Version, o.Commit)
	if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "collector_checkpoint_damaged_values_total",
		Help: "Damaged values of the checkpoint's delivered sets and sinks' held sets met since the start (a wrong checksum): their records count as not delivered (delivered again if asked again) or not held (written again to that sink): a copy, never a loss."},
		func() float64 { return float64(store.DamagedValues()) })); err != nil {
		return fmt.Errorf("register the checkpoint's metrics: %w", err)
	}
	if err := registerShard(reg, cfg); err != nil {
		return err
	}
	// One scrubber for every error that may hold a server's words.
	scr := newTenantsScrubber(cfg, srcCfgs, os.Getenv)
	runs, err := buildTenants(cfg, srcCfgs, reg, log, scr, store, once)
	if err != nil {
		return err
	}
	pollers := pollersOf(runs)
	sinks, err := newSinks(cfg, streams, deadLetterDir(cfg), reg, log, o.Stdout, scr)
	if err != nil {
		return err
	}
	producers := make([]pipeline.Producer, len(pollers))
	for i, p := range pollers {
		producers[i] = p
	}
	pl := pipeline.New(cfg.Pipeline, store, targets(sinks), producers, reg, log, nil)
	// The backlog estimates take the first tenant's rates and sources.
	prog, err := status.NewReporter(srcCfgs[0], streams, pollers, pipelineState{pl}, cfg.Log.Progress, reg, log)
	if err != nil {
		return err
	}
	prog.SetFailingAfter(cfg.Metrics.FailingAfter)
	hub, err := newTap(cfg.Metrics, pl, streams, reg, log)
	if err != nil {
		return err
	}
	var rl *reloader
	if o.Reload != nil && len(cfg.Tenants) == 0 {
		r := runs[0]
		if rl, err = newReloader(o.Reload, cfg, r.set, r.opts, once, pl, prog, hub, sim, reg, log); err != nil {
			return err
		}
	}

	// Telemetry answers before the sinks start, which may take long (a
	// destination down): /readyz says what the start waits for, /state
	// shows the checkpoint meanwhile.
	var start startup
	tel, err := startTelemetry(ctx, cfg.Metrics.Listen, cfg.Metrics.Pprof, reg, log, store, srcCfgs[0], streams, &start)
	if err != nil {
		return err
	}
	defer shutdownTelemetry(tel)
	switch {
	case tel == nil: // no metrics.listen: no server, no tap
	case hub == nil:
		// Off (metrics.tap.enabled false, the default): /tap says so.
		tel.AddHandler("/tap", tap.Off())
	default:
		tel.AddHandler("/tap", hub.Handler())
		// Before the telemetry server's shutdown (defers run last first):
		// an open tap would hold it up.
		defer hub.Close()
	}
	if tel != nil {
		// Served once the pipeline runs (below).
		tel.AddHandler("POST /-/reload", reloadOff(cfg.Metrics.Reload.Enabled))
	}
	start.waitFor(sinks)
	addSinkReadiness(tel, sinks)
	// Sinks that started are shut down also when another cannot start
	// (Shutdown without Start is harmless).
	defer shutdownSinksBy(stopDeadline(ctx, cfg.Pipeline.StopTimeout), sinks, log)
	if err := startSinks(ctx, sinks, log); err != nil {
		var cfgErr *config.KeyError
		if ctx.Err() != nil && !errors.As(err, &cfgErr) {
			// A stop asked for while a sink waited for its destination is
			// a clean stop (exit 0), as it is at any other moment: nothing
			// was read, so nothing is lost.
			log.Warn("stopped before every sink started", "err", err)
			return nil
		}
		return err
	}

	if o.Progress != nil {
		prog.ShowOn(o.Progress)
	}
	addRunReadiness(tel, pl, sinks, prog, cfg.Tenants)
	if sh, ok := cfg.Sharding(); ok && tel != nil {
		tel.AddHandler("/state", shardHeaders(sh, prog.Handler()))
	}
	if rl == nil && len(cfg.Tenants) > 0 && o.Reloads != nil {
		go refuseReloads(ctx, o.Reloads, log)
	}
	if rl != nil {
		if tel != nil && cfg.Metrics.Reload.Enabled {
			tel.AddHandler("POST /-/reload", rl.handler(ctx, cfg.Metrics.Reload.TokenFile))
		}
		if o.Reloads != nil {
			go rl.run(ctx, o.Reloads)
		}
	}
	start.finish()

	started := []any{"streams", len(pollers), "sinks", describeSinks(sinks), "once", once,
		"checkpoint", cfg.Checkpoint.Path, "buffer_records", cfg.Pipeline.BufferRecords}
	if len(cfg.Tenants) > 0 {
		started = append(started, "tenants", len(cfg.Tenants))
	}
	if sh, ok := cfg.Sharding(); ok {
		started = append(started, "shard", sh.Shard.String(), "owned_tenants", strings.Join(sh.Owned, ","), "of_tenants", sh.Of)
	}
	log.Info("collector started", started...)
	if err := runWithProgress(ctx, pl, prog); err != nil {
		return err
	}
	if once && ctx.Err() != nil {
		// A stop is not a failure (docs/commands.md: SIGTERM exits 0): what was
		// fetched is written and committed; the next run continues.
		log.Info("stopped before every source caught up; the next run continues from the checkpoint")
	}
	return nil
}

// newTap builds the hub of /tap, for `collector tap` (package tap): what
// the pipeline delivers of the streams, with no request to the API, to the
// taps that send the token of metrics.tap.token_file (when set). Its
// metrics are registered on reg, at 0 from the first scrape. The tap off
// (metrics.tap.enabled false, the default, or no metrics.listen): nil, and
// the pipeline publishes nothing.
func newTap(mc config.MetricsConfig, pl *pipeline.Pipeline, streams []record.Stream, reg prometheus.Registerer, log *slog.Logger) (*tap.Hub, error) {
	if mc.Listen == "" || !mc.Tap.Enabled {
		return nil, nil
	}
	hub := tap.NewHub(tap.Options{Streams: streams, TokenFile: mc.Tap.TokenFile, Log: log})
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "collector_tap_clients",
			Help: "Taps (collector tap, GET /tap) reading what the collector delivers now."},
			func() float64 { return float64(hub.Clients()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "collector_tap_dropped_total",
			Help: "Envelopes not sent to a tap because it read slower than the collector delivered (never held back from the sinks)."},
			func() float64 { return float64(hub.Dropped()) }),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register the tap's metrics: %w", err)
		}
	}
	pl.OnAcknowledged(hub.Publish)
	return hub, nil
}

// sourceOptions are the pollers' dependencies, with their metrics
// registered on reg once for the process (a reload builds pollers with
// the same). A page larger than the buffer is emitted in batches of at
// most pipeline.buffer_records, so memory stays bounded by configuration.
// The rechecks read the delivered counts of counts (the checkpoint).
func sourceOptions(cfg config.Config, reg prometheus.Registerer, log *slog.Logger, scr *secret.Scrubber, counts recheck.Counts) (source.Options, error) {
	srcMetrics, err := source.NewMetrics(reg)
	if err != nil {
		return source.Options{}, err
	}
	apiMetrics, err := api.NewMetrics(reg)
	if err != nil {
		return source.Options{}, err
	}
	recheckMetrics, err := recheck.NewMetrics(reg)
	if err != nil {
		return source.Options{}, err
	}
	return source.Options{Client: api.Options{Logger: log, Metrics: apiMetrics, Scrubber: scr},
		Metrics: srcMetrics, MaxBatchRecords: cfg.Pipeline.BufferRecords, RecheckMetrics: recheckMetrics, RecheckCounts: counts}, nil
}

// addSinkReadiness adds to tel (nil: none) a check per sink: whether it
// started and can reach its destination.
func addSinkReadiness(tel *telemetry.Server, sinks []*sinkRun) {
	if tel == nil {
		return
	}
	for _, r := range sinks {
		tel.AddReadiness("sink:"+r.name(), func(ctx context.Context) error {
			if err := r.ready.get(); err != nil {
				return err
			}
			return r.sink.Ready(ctx)
		})
	}
}

// addRunReadiness adds to tel (nil: none) the checks of a running
// collector and its live /state.
func addRunReadiness(tel *telemetry.Server, pl *pipeline.Pipeline, sinks []*sinkRun, prog *status.Reporter, tenants []config.TenantConfig) {
	if tel == nil {
		return
	}
	tel.AddReadiness("checkpoint", func(context.Context) error { return pl.CommitError() })
	// A sink's own Ready says whether it can reach its destination;
	// this says whether its last write actually succeeded (a full disk).
	for _, r := range sinks {
		tel.AddReadiness("sink_write:"+r.name(), func(context.Context) error { return pl.SinkWriteError(r.name()) })
	}
	if len(tenants) > 0 {
		addTenantReadiness(tel, prog, tenants)
	} else {
		// Streams refused for good (C5: a 403 for a sub-account, org-level
		// audit logs) keep failing: named here with their scrubbed reason.
		tel.AddReadiness("streams", func(context.Context) error { return prog.BlockedError() })
		// Streams whose polls keep failing (a 5xx or a timeout that never
		// clears) and that have not committed for three intervals (at
		// least metrics.failing_after), with their scrubbed errors.
		tel.AddReadiness("streams_failing", func(context.Context) error { return prog.FailingError(time.Now()) })
	}
	// Liveness fails only for a wedged process: records wait, nothing is
	// acknowledged, and yet every sink says it is reachable. A sink that
	// is down shows in /readyz; restarting would not bring it back.
	tel.AddLiveness("pipeline", func(ctx context.Context) error {
		err := pl.Stalled()
		if err == nil || allReady(ctx, sinks) != nil {
			return nil
		}
		return err
	})
	tel.AddHandler("/state", prog.Handler())
}

// stopDeadline is when everything must have stopped: the drain (in the
// pipeline) and the sinks' shutdown share stopTimeout from the moment ctx
// ends (the stop signal) on. Call the returned func when shutting down.
func stopDeadline(ctx context.Context, stopTimeout time.Duration) func() time.Duration {
	var stopAt atomic.Int64
	context.AfterFunc(ctx, func() { stopAt.Store(time.Now().UnixNano()) })
	return func() time.Duration {
		left := stopTimeout
		if at := stopAt.Load(); at != 0 {
			left -= time.Since(time.Unix(0, at))
		}
		return max(left, 5*time.Second)
	}
}

// shutdownSinksBy shuts the sinks down within what left returns.
func shutdownSinksBy(left func() time.Duration, sinks []*sinkRun, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.Background(), left())
	defer cancel()
	shutdownSinks(sctx, sinks, log)
}

// runWithProgress runs pl until it ends, with prog reporting meanwhile and
// its summary logged at the end.
func runWithProgress(ctx context.Context, pl *pipeline.Pipeline, prog *status.Reporter) error {
	progCtx, stopProg := context.WithCancel(context.Background())
	progDone := make(chan struct{})
	go func() { defer close(progDone); prog.Run(progCtx) }()
	err := pl.Run(ctx)
	stopProg()
	<-progDone
	prog.Summary()
	return err
}

// openCheckpoint opens the checkpoint file. A path that is not a
// checkpoint at all (a directory, a text file) is a configuration error
// naming checkpoint.path (exit 2); a damaged checkpoint is a runtime
// failure whose message says how to recover; a file opened from bbolt's
// second meta page is logged.
func openCheckpoint(cfg config.Config, log *slog.Logger) (*checkpoint.DB, error) {
	db, err := checkpoint.Open(cfg.Checkpoint.Path, checkpoint.WithOpenTimeout(cfg.Checkpoint.OpenTimeout), checkpoint.WithLogger(log))
	if err != nil {
		return nil, checkpointError(err)
	}
	if r := db.Recovered(); r != "" {
		log.Warn("checkpoint file was damaged and recovered", "path", cfg.Checkpoint.Path, "detail", r)
	}
	return db, nil
}

// startSink starts a sink (start is its Start), retrying with backoff while the destination is
// unreachable: a collector that starts before its Kafka or ClickHouse must
// wait for it, not exit. Readiness reports the last error meanwhile.
func startSink(ctx context.Context, start func(context.Context) error, ready *readiness, log *slog.Logger) error {
	policy := backoff.Policy{Initial: time.Second, Max: time.Minute, Jitter: backoff.Equal}
	for attempt := 1; ; attempt++ {
		err := start(ctx)
		ready.set(err)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("start sink: %w", err)
		}
		var cfgErr *config.KeyError
		if errors.As(err, &cfgErr) {
			return fmt.Errorf("start sink: %w", err)
		}
		wait := policy.Wait(attempt - 1)
		log.Warn("sink not ready; retrying", "attempt", attempt, "retry_in", wait.Round(time.Millisecond), "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("start sink: %w", err)
		}
	}
}

// readiness holds the last error of something that is retried.
type readiness struct {
	mu  sync.Mutex
	err error
}

func (r *readiness) set(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

func (r *readiness) get() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
