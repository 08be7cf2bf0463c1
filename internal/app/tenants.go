package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/status"
	"github.com/svcexport/collector/internal/telemetry"
)

// tenantRun is what one tenant's sources run with (docs/tenants.md): its
// pollers' configuration, its clients and pollers, and the options they
// were built with. Each tenant is its own world: its own API and edge
// clients (token, learnt limits and delays, 401/403/429 handling) and its
// own budget (source.Build makes one per set), so that one tenant's bad
// key, outage or backfill never spends another's requests.
type tenantRun struct {
	cfg  catalog.Config
	set  *source.Set
	opts source.Options
}

// resolveSources returns the pollers' configuration of every tenant
// (config.Config.SourceConfigs), the one-tenant form with the in-process
// simulator's addresses and credentials filled in when it is enabled
// (resolveSource).
func resolveSources(cfg config.Config, log *slog.Logger) ([]catalog.Config, *apisim.Server, error) {
	if len(cfg.Tenants) > 0 {
		return cfg.SourceConfigs(), nil, nil
	}
	sc, sim, err := resolveSource(cfg, log)
	return []catalog.Config{sc}, sim, err
}

// tenantStreams returns every stream of srcs, tenant by tenant.
func tenantStreams(srcs []catalog.Config) []record.Stream {
	var out []record.Stream
	for _, sc := range srcs {
		out = append(out, source.Streams(sc)...)
	}
	return out
}

// buildTenants builds the clients and pollers of every tenant of srcs.
// The one-tenant form registers its metrics on reg as ever; a named
// tenant's source, API and recheck metrics carry the label tenant (a
// configured name, so the label set stays bounded), and its log lines the
// attribute tenant.
func buildTenants(cfg config.Config, srcs []catalog.Config, reg prometheus.Registerer, log *slog.Logger, scr *secret.Scrubber,
	counts recheck.Counts, once bool) ([]tenantRun, error) {
	runs := make([]tenantRun, 0, len(srcs))
	for _, sc := range srcs {
		treg, tlog := reg, log
		if sc.Tenant != "" {
			treg = prometheus.WrapRegistererWith(prometheus.Labels{"tenant": sc.Tenant}, reg)
			tlog = log.With("tenant", sc.Tenant)
		}
		opts, err := sourceOptions(cfg, treg, tlog, scr, counts)
		if err != nil {
			return nil, err
		}
		set, err := source.Build(sc, nil, opts, once)
		if err != nil {
			return nil, err
		}
		runs = append(runs, tenantRun{cfg: sc, set: set, opts: opts})
	}
	return runs, nil
}

// pollersOf returns every tenant's pollers, in the order of tenantStreams.
func pollersOf(runs []tenantRun) []*source.Poller {
	var out []*source.Poller
	for _, r := range runs {
		out = append(out, r.set.Pollers...)
	}
	return out
}

// refuseReloads logs, for every reload asked for, that a collector with
// tenants does not reload yet: a restart applies a new configuration and
// loses nothing (each tenant's progress is in the checkpoint).
func refuseReloads(ctx context.Context, reloads <-chan struct{}, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reloads:
			log.Warn("configuration reload refused: a collector with tenants does not reload yet; restart it to apply a new configuration (nothing is lost)")
		}
	}
}

// addTenantReadiness adds to tel the stream checks of a collector of
// tenants: one check "tenant:NAME" per tenant, its blocked and failing
// streams (a refused key, an outage), shown by /readyz without failing
// it, since the collector serves the other tenants; and "tenants", which
// fails only when every tenant fails, naming them.
func addTenantReadiness(tel *telemetry.Server, prog *status.Reporter, tenants []config.TenantConfig) {
	for _, t := range tenants {
		tel.AddDegraded("tenant:"+t.Name, func(context.Context) error { return prog.TenantErrors(time.Now())[t.Name] })
	}
	tel.AddReadiness("tenants", func(context.Context) error {
		errs := prog.TenantErrors(time.Now())
		var names []string
		for _, t := range tenants {
			if errs[t.Name] == nil {
				return nil
			}
			names = append(names, t.Name)
		}
		return fmt.Errorf("every tenant fails (%s): see the checks tenant:NAME", strings.Join(names, ", "))
	})
}

// registerShard registers, for a sharded collector (config.ForShard), the
// gauge of the tenants it owns, labelled with its shard ("1/3") and
// total (the configured tenants), so that a dashboard sums the shards'
// to the total: each tenant is in exactly one.
func registerShard(reg prometheus.Registerer, cfg config.Config) error {
	sh, ok := cfg.Sharding()
	if !ok {
		return nil
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "collector_shard_owned_tenants",
		Help:        "Tenants this collector runs: the ones its shard owns by rendezvous hashing of their names (docs/tenants.md, More collectors).",
		ConstLabels: prometheus.Labels{"shard": sh.Shard.String(), "tenants": strconv.Itoa(sh.Of)}})
	g.Set(float64(len(sh.Owned)))
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("register the shard's metrics: %w", err)
	}
	return nil
}

// shardHeaders has h answer with the headers Collector-Shard ("1/3") and
// Collector-Shard-Tenants (the owned tenants, comma-separated): /state of
// a sharded collector says which shard it is and which tenants it runs,
// its body (the streams) unchanged.
func shardHeaders(sh config.Sharding, h http.Handler) http.Handler {
	tenants := strings.Join(sh.Owned, ",")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Collector-Shard", sh.Shard.String())
		w.Header().Set("Collector-Shard-Tenants", tenants)
		h.ServeHTTP(w, r)
	})
}

// runEmptyShard runs a shard that owns none of the tenants
// (config.Sharding.Empty: more shards than tenants, or a StatefulSet
// scaled before the tenants were added) as a production daemon idles,
// rather than refusing to start (in Kubernetes, a crash loop): it logs
// one warning and, on metrics.listen, serves /metrics (with
// collector_shard_owned_tenants at 0), /readyz ready (its check "shard"
// names the empty shard without failing it) and /state with no stream and
// the headers of its shard, until ctx ends. It opens no checkpoint and no
// sink: there is nothing to write. A restart with more tenants or fewer
// shards gives it tenants; a reload is refused as for every collector of
// tenants. With once, there is nothing to catch up: it returns nil.
func runEmptyShard(ctx context.Context, cfg config.Config, o Options, sh config.Sharding, once bool) error {
	log := o.Log
	log.Warn("this shard owns none of the tenants: it runs idle until a restart with more tenants or fewer shards (docs/tenants.md, Shards)",
		"shard", sh.Shard.String(), "of_tenants", sh.Of, "once", once)
	if once {
		return nil
	}
	reg := telemetry.NewRegistry(o.Version, o.Commit)
	if err := registerShard(reg, cfg); err != nil {
		return err
	}
	if cfg.Metrics.Listen != "" {
		tel := telemetry.New(cfg.Metrics.Listen, reg, log)
		if cfg.Metrics.Pprof {
			tel.ServeProfiles()
		}
		tel.AddDegraded("shard", func(context.Context) error {
			return fmt.Errorf("%s: nothing to collect until a restart with more tenants or fewer shards", sh)
		})
		tel.AddHandler("/state", shardHeaders(sh, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "[]\n")
		})))
		if err := tel.Start(ctx); err != nil {
			return err
		}
		defer shutdownTelemetry(tel)
	}
	if o.Reloads != nil {
		go refuseReloads(ctx, o.Reloads, log)
	}
	log.Info("collector started", "streams", 0, "shard", sh.Shard.String(), "owned_tenants", "", "of_tenants", sh.Of)
	<-ctx.Done()
	return nil
}
