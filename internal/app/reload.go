package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/pipeline"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/status"
	"github.com/svcexport/collector/internal/tap"
)

// The configuration reload (issue 33 item 1: SIGHUP and POST /-/reload,
// as Prometheus, Vector and Fluent Bit do): the configuration is read and
// validated again as a start would, and a good one is applied to the
// running collector stream by stream; a bad one, or one that changes what
// cannot change in place, is refused and the collector goes on with the
// one it has.

// reloader applies configurations read again to a running collector. Its
// reload is safe for concurrent use: reloads take turns.
type reloader struct {
	mu   sync.Mutex
	load func() (config.Config, error)
	log  *slog.Logger
	once bool
	sim  *apisim.Server // the in-process simulator whose addresses fill in; nil
	opts source.Options // the pollers' dependencies, as at the start
	pl   *pipeline.Pipeline
	prog *status.Reporter
	hub  *tap.Hub // nil: the tap is off

	cfg config.Config // the configuration running
	set *source.Set

	ok, at prometheus.Gauge
}

// newReloader returns the reloader of the collector running cfg, whose
// streams are set's; load reads the configuration again. Its two gauges
// (the Prometheus names) are registered on reg: successful (1 at start)
// and the time of the last success (the start).
func newReloader(load func() (config.Config, error), cfg config.Config, set *source.Set, opts source.Options, once bool,
	pl *pipeline.Pipeline, prog *status.Reporter, hub *tap.Hub, sim *apisim.Server, reg prometheus.Registerer, log *slog.Logger) (*reloader, error) {
	r := &reloader{load: load, log: log, once: once, sim: sim, opts: opts, pl: pl, prog: prog, hub: hub, cfg: cfg, set: set,
		ok: prometheus.NewGauge(prometheus.GaugeOpts{Name: "collector_config_last_reload_successful",
			Help: "1 when the last configuration reload (SIGHUP, POST /-/reload) was applied, or none was asked; 0 when it was refused and the configuration before runs on."}),
		at: prometheus.NewGauge(prometheus.GaugeOpts{Name: "collector_config_last_reload_success_timestamp_seconds",
			Help: "When the configuration running was applied (Unix seconds): the start, or the last successful reload."}),
	}
	for _, c := range []prometheus.Collector{r.ok, r.at} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register the reload's metrics: %w", err)
		}
	}
	r.ok.Set(1)
	r.at.SetToCurrentTime()
	return r, nil
}

// reload reads the configuration again and applies it (apply); by names
// what asked (SIGHUP, POST /-/reload). A refused configuration is logged
// (ERROR, with the key when it names one) and counted, and the one
// before goes on. ctx bounds the wait for removed streams' commits.
func (r *reloader) reload(ctx context.Context, by string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	began := time.Now()
	next, err := r.load()
	var ch source.Changes
	if err == nil {
		ch, err = r.apply(ctx, next)
	}
	if err != nil {
		r.ok.Set(0)
		attrs := []any{"by", by, "err", oneLineErr(err)}
		var ke *config.KeyError
		if errors.As(err, &ke) {
			attrs = append(attrs, "key", ke.Key)
		}
		r.log.Error("configuration reload refused; the configuration before runs on", attrs...)
		return err
	}
	r.ok.Set(1)
	r.at.SetToCurrentTime()
	r.log.Info("configuration reloaded", "by", by, "added", names(ch.Added), "restarted", names(ch.Changed), "removed", names(ch.Removed),
		"streams", len(r.set.Pollers), "seconds", time.Since(began).Seconds())
	return nil
}

// oneLineErr is err's text on one line: a configuration's problems are
// joined by "; ".
func oneLineErr(err error) string {
	return strings.Join(config.Lines(err, 20), "; ")
}

// apply changes the running collector to next: the streams next adds
// start, those it drops stop once their pages are committed (their
// checkpoint state stays), those whose settings it changes restart alone,
// and every other stream goes on untouched. The clients kept read their
// secret files again. A change of what cannot change in place is refused
// before anything changes (restartKey).
func (r *reloader) apply(ctx context.Context, next config.Config) (source.Changes, error) {
	if err := restartKey(r.cfg, next); err != nil {
		return source.Changes{}, err
	}
	src := next.SourceConfig()
	if r.sim != nil {
		src = next.SimulatorSourceConfig(r.sim.URL())
	}
	set, ch, err := r.set.Update(src, r.opts, r.once)
	if err != nil {
		return ch, err
	}
	for _, c := range []*api.Client{set.Core, set.Edge} {
		if c != nil && (c == r.set.Core || c == r.set.Edge) {
			c.ReadSecretAgain(ctx)
		}
	}
	select {
	case <-r.pl.Running():
	case <-ctx.Done():
		return ch, fmt.Errorf("reload: the pipeline did not start: %w", ctx.Err())
	}
	var errs []error
	for _, p := range ch.Added {
		errs = append(errs, r.pl.Add(ctx, p))
	}
	for _, p := range ch.Changed {
		errs = append(errs, r.pl.Restart(ctx, p))
	}
	for _, p := range ch.Removed {
		errs = append(errs, r.pl.Remove(ctx, p.Stream()))
	}
	// What runs now is the new set's, whatever failed above (logged).
	streams := make([]record.Stream, len(set.Pollers))
	for i, p := range set.Pollers {
		streams[i] = p.Stream()
	}
	r.prog.Update(src, streams, set.Pollers)
	r.prog.SetFailingAfter(next.Metrics.FailingAfter)
	if r.hub != nil {
		r.hub.SetStreams(streams)
	}
	r.cfg, r.set = next, set
	if err := errors.Join(errs...); err != nil {
		return ch, fmt.Errorf("reload applied in part: %w", err)
	}
	return ch, nil
}

// names lists the streams of ps, "" when none.
func names(ps []*source.Poller) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Stream().String()
	}
	return strings.Join(out, ",")
}

// restartKey refuses, naming its key, a change of what the running
// process holds for its life: the checkpoint file, the pipeline's buffer
// and workers, the sinks (their connections, ledgers and metrics), the
// telemetry listener and its endpoints, the logger, the in-process
// simulator, and the API rates (the budget's buckets, made at their
// first use, C4). Restarting everything for them would be a restart by
// another name; the supervisor's restart does it with no state of the
// old process left behind.
func restartKey(old, next config.Config) error {
	for _, s := range []struct {
		key string
		of  func(config.Config) any
	}{
		{"checkpoint", func(c config.Config) any { return c.Checkpoint }},
		{"pipeline", func(c config.Config) any { return c.Pipeline }},
		{"sink", func(c config.Config) any { return c.Sink }},
		{"sinks", func(c config.Config) any { return c.SinkList }},
		{"metrics.listen", func(c config.Config) any { return c.Metrics.Listen }},
		{"metrics.pprof", func(c config.Config) any { return c.Metrics.Pprof }},
		{"metrics.tap", func(c config.Config) any { return c.Metrics.Tap }},
		{"metrics.reload", func(c config.Config) any { return c.Metrics.Reload }},
		{"log", func(c config.Config) any { return c.Log }},
		{"simulator", func(c config.Config) any { return c.Simulator }},
		{"api.rate", func(c config.Config) any { return c.API.Rate }},
		{"edge.rate", func(c config.Config) any { return c.Edge.Rate }},
	} {
		if key := differs(s.key, reflect.ValueOf(s.of(old)), reflect.ValueOf(s.of(next))); key != "" {
			return &config.KeyError{Key: key, Msg: "cannot change while the collector runs: it needs a restart (the configuration before runs on)"}
		}
	}
	return nil
}

// differs returns the key path, under key, of the first value that
// differs between a and b (a field of a struct by its koanf name), ""
// when they are equal.
func differs(key string, a, b reflect.Value) string {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return ""
	}
	if a.Kind() != reflect.Struct {
		return key
	}
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		if k := differs(key+"."+name, a.Field(i), b.Field(i)); k != "" {
			return k
		}
	}
	return key
}

// run reloads at every signal of sig until ctx ends.
func (r *reloader) run(ctx context.Context, sig <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			_ = r.reload(ctx, "SIGHUP")
		}
	}
}

// reloadWait bounds how long POST /-/reload waits for the reload before
// answering (the telemetry server's write timeout is 2 minutes); the
// reload goes on after it.
const reloadWait = 90 * time.Second

// handler serves POST /-/reload: 200 once the configuration is applied,
// 400 with the problems ("config: key: message" lines) for a refused one,
// 401 without the token of tokenFile (when set), 503 when the reload
// takes longer than reloadWait (it goes on; the logs and the gauges say
// how it ended), 500 for a failure while applying. ctx is the run's: a
// reload is not cut short by its client leaving.
func (r *reloader) handler(ctx context.Context, tokenFile string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if tokenFile != "" {
			want, err := tap.ReadToken(tokenFile)
			if err != nil {
				r.log.Error("POST /-/reload refused: metrics.reload.token_file cannot be used", "err", err)
				http.Error(w, "metrics.reload.token_file cannot be used; see the collector's log", http.StatusInternalServerError)
				return
			}
			if !tap.Authorized(req, want) {
				http.Error(w, "/-/reload asks for the bearer token of the collector's metrics.reload.token_file (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
				return
			}
		}
		done := make(chan error, 1)
		go func() { done <- r.reload(ctx, "POST /-/reload") }()
		timer := time.NewTimer(reloadWait)
		defer timer.Stop()
		select {
		case err := <-done:
			var ke *config.KeyError
			switch {
			case err == nil:
				fmt.Fprintln(w, "configuration reloaded")
			case errors.As(err, &ke):
				var b strings.Builder
				for _, l := range config.Lines(err, 50) {
					b.WriteString("config: " + l + "\n")
				}
				http.Error(w, strings.TrimSuffix(b.String(), "\n"), http.StatusBadRequest)
			default:
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		case <-timer.C:
			http.Error(w, "the reload is still being applied (removed streams wait for their pages to be committed); the log and collector_config_last_reload_successful say how it ends", http.StatusServiceUnavailable)
		case <-req.Context().Done():
		}
	})
}

// reloadOff answers POST /-/reload while it is not served: 404 when off
// (metrics.reload.enabled false), 503 while the collector starts.
func reloadOff(enabled bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if enabled {
			http.Error(w, "the collector is starting: a reload is served once its sinks started", http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "reload over HTTP is off in this collector's configuration: set metrics.reload.enabled: true (SIGHUP reloads always)", http.StatusNotFound)
	})
}
