package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/access"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/status"
)

// CheckOptions tune the check command.
type CheckOptions struct {
	// Timeout bounds each online step (DNS, connect, TLS, the token
	// request, the sink). Default 10s.
	Timeout time.Duration
	// Offline only validates (cmd/collector loaded the configuration with
	// config.LoadOptions.Offline): no secret, no file, no network.
	Offline bool
	// Print prints the resolved configuration (see PrintConfig) instead
	// of checking anything online.
	Print bool
}

func (co CheckOptions) timeout() time.Duration {
	if co.Timeout <= 0 {
		return 10 * time.Second
	}
	return co.Timeout
}

// redactedURL is u without the password of its userinfo, if any.
func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "<unparsable URL>"
	}
	return p.Redacted()
}

// ErrCheckFailed is returned by Check when a check did not pass; the report
// says which (its FAIL lines), the error how many.
var ErrCheckFailed = errors.New("see the FAIL lines of the report")

// checkFailed is Check's error when n checks did not pass.
func checkFailed(n int) error {
	if n == 1 {
		return fmt.Errorf("1 check failed: %w", ErrCheckFailed)
	}
	return fmt.Errorf("%d checks failed: %w", n, ErrCheckFailed)
}

// Check validates the configuration (already done by loading it), warns of
// a sources.*.start beyond api.max_history (startWarnings) and of an open
// /tap (tapWarnings), online and offline, and, online, prints a summary of the configuration, makes
// the checks run makes before it starts (runPreflight: the checkpoint
// path, each sink's configuration; read-only, so beside a running
// collector too), asks the core API for one token, and checks every sink
// can be reached, without moving any data, and says how many API requests
// it spent of which buckets (C4). Its error wraps ErrCheckFailed
// when a check failed, and the *config.KeyError of each failure that run
// refuses to start with (exit 2). Offline it only says the configuration
// is valid and how many streams it defines; with Print it prints the
// configuration (PrintConfig) and checks nothing else.
func Check(ctx context.Context, cfg config.Config, o Options, co CheckOptions) error {
	o = o.withDefaults()
	w := o.Stdout
	if co.Print {
		return PrintConfig(w, cfg)
	}
	if co.Offline {
		n := 0
		if streams, err := configuredStreams(cfg); err == nil {
			n = len(streams)
		}
		fmt.Fprintf(w, "ok    configuration valid, %d streams (offline: secrets, files and network not checked)\n", n)
		printWarnings(w, startWarnings(cfg.SourceConfig(), time.Now()))
		printWarnings(w, tapWarnings(cfg.Metrics))
		return nil
	}
	srcCfgs, sim, err := resolveSources(cfg, o.Log)
	if err != nil {
		return err
	}
	if sim != nil {
		defer sim.Close()
	}
	// One scrubber of every secret of the configuration: what a check
	// prints may carry a server's words (issue 20).
	scr := newTenantsScrubber(cfg, srcCfgs, os.Getenv)
	failed := 0
	report := func(what string, err error) {
		if err != nil {
			failed++
			fmt.Fprintf(w, "FAIL  %s: %v\n", what, scr.Error(err))
			return
		}
		fmt.Fprintf(w, "ok    %s\n", what)
	}
	// Each tenant's clients and streams (the one-tenant form's alone),
	// then what run checks before it starts, with run's messages, then
	// each tenant's API.
	tenant := func(sc catalog.Config) {
		if sc.Tenant != "" {
			fmt.Fprintf(w, "--    tenant %s\n", sc.Tenant)
		}
	}
	checks := make([]*apiCheck, len(srcCfgs))
	for i, sc := range srcCfgs {
		tenant(sc)
		checks[i] = newAPICheck(w, cfg, sc, o, co, scr, report)
		defer checks[i].summary()
		if checks[i].set == nil && len(srcCfgs) == 1 {
			return checkFailed(failed)
		}
	}
	printWarnings(w, tapWarnings(cfg.Metrics))
	streams := tenantStreams(srcCfgs)
	pre := runPreflight(cfg, streams)
	if pre.CheckpointErr != nil {
		report("checkpoint "+cfg.Checkpoint.Path, pre.CheckpointErr)
	} else {
		fmt.Fprintf(w, "ok    checkpoint %s: %s\n", cfg.Checkpoint.Path, pre.Checkpoint)
	}
	for i, sc := range srcCfgs {
		if checks[i].set == nil {
			continue
		}
		if len(srcCfgs) > 1 {
			tenant(sc)
		}
		checks[i].probe(ctx)
	}
	for i, sc := range cfg.Sinks() {
		what := "sink " + sc.SinkName()
		if sc.SinkName() != sc.Type {
			what += " (" + sc.Type + ")"
		}
		if err := pre.Sinks[i]; err != nil {
			report(what, err)
			continue
		}
		report(what, checkSink(ctx, sc, streams, o, co.timeout(), scr))
	}
	if failed > 0 {
		// A configuration error run refuses to start with makes check
		// exit as run would: 2.
		return errors.Join(checkFailed(failed), pre.configErrors())
	}
	return nil
}

// apiCheck checks the API part of one tenant's configuration (the
// one-tenant form's alone): its streams (newAPICheck), its token, access
// and edge API (probe), and what the check spent of its budget (summary).
type apiCheck struct {
	w       io.Writer
	src     catalog.Config
	co      CheckOptions
	report  func(string, error)
	counter *countingTransport
	set     *source.Set // nil when the sources could not be built
}

// newAPICheck builds the clients and streams of srcCfg, reporting them.
func newAPICheck(w io.Writer, cfg config.Config, srcCfg catalog.Config, o Options, co CheckOptions, scr *secret.Scrubber, report func(string, error)) *apiCheck {
	// One attempt, within the check's deadline: check reports a cause in
	// seconds; the daemon's retries are for the daemon.
	srcCfg.API.Retry.MaxAttempts = 1
	srcCfg.API.Timeout = min(srcCfg.API.Timeout, co.timeout())
	srcCfg.Edge.Timeout = min(srcCfg.Edge.Timeout, co.timeout())
	// Every request check makes is counted: it says what it spent of the
	// API's budget (C4).
	c := &apiCheck{w: w, src: srcCfg, co: co, report: report, counter: &countingTransport{next: http.DefaultTransport}}
	// A tenant's clients log with its name, as run's do.
	set, err := source.Build(srcCfg, nil, source.Options{Client: api.Options{Logger: tenantLog(o.Log, srcCfg.Tenant), Scrubber: scr, HTTPClient: &http.Client{Transport: c.counter}}}, true)
	if err != nil {
		report("sources", err)
		return c
	}
	c.set = set
	configSummary(w, cfg, srcCfg, len(set.Pollers))
	fmt.Fprintf(w, "ok    %d streams configured\n", len(set.Pollers))
	printWarnings(w, startWarnings(srcCfg, time.Now()))
	return c
}

// summary says what the check spent of the tenant's budget.
func (c *apiCheck) summary() {
	fmt.Fprintln(c.w, c.counter.summary(rateLimit(c.src), ratePeriod(c.src)))
}

// probe checks the core API's token and access and the edge API.
func (c *apiCheck) probe(ctx context.Context) {
	srcCfg, co, report, set := c.src, c.co, c.report, c.set
	if set.Core != nil {
		if err := probe(ctx, srcCfg.API.BaseURL, co.timeout()); err != nil {
			report("core API at "+redactedURL(srcCfg.API.BaseURL), err)
		} else {
			cctx, cancel := context.WithTimeout(ctx, co.timeout())
			tokenErr := set.Core.Check(cctx)
			cancel()
			report("core API token from "+redactedURL(srcCfg.API.BaseURL), tokenErr)
			if tokenErr == nil {
				checkAccess(ctx, set.Core, srcCfg, co, report)
			}
		}
	}
	if set.Edge != nil {
		if err := probe(ctx, srcCfg.Edge.BaseURL, co.timeout()); err != nil {
			report("edge API at "+redactedURL(srcCfg.Edge.BaseURL), err)
		} else {
			fmt.Fprintf(c.w, "ok    edge API at %s reachable (token set; the edge API has no token endpoint to test it without spending a request)\n", redactedURL(srcCfg.Edge.BaseURL))
		}
	}
}

// checkAccess asks, once the token works, whether the key may read each
// configured core stream (C1, C2, C5: a key without access to a
// sub-account or to organization-level audit logs gets a 403 that would
// block the stream at run time): one first page of a tiny window per
// stream, one report line each, all within co.timeout().
func checkAccess(ctx context.Context, c *api.Client, cfg catalog.Config, co CheckOptions, report func(what string, err error)) {
	actx, cancel := context.WithTimeout(ctx, co.timeout())
	defer cancel()
	for _, r := range access.ProbeWith(actx, c, cfg) {
		report("access of "+r.Stream.String(), r.Err)
	}
}

// PrintConfig writes the resolved configuration as YAML (secrets
// redacted, ${VAR} references resolved, a ${ in a value written $${),
// which loads back as the same configuration once the secrets are
// supplied again, followed by comments listing each source's streams and
// resolved settings (the values as they are, not escaped).
func PrintConfig(w io.Writer, cfg config.Config) error {
	dump, err := cfg.Dump()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "# The collector's configuration, resolved: ${...} expanded (a literal ${ written $${), defaults filled in, keys left out unset.")
	fmt.Fprintln(w, "# Secrets show as [redacted]: supply them again (COLLECTOR_API__SECRET, ... or *_file keys) to use it.")
	w.Write(dump)
	streams, err := configuredStreams(cfg)
	if err != nil {
		fmt.Fprintf(w, "# streams: none (%v)\n", err)
		return nil
	}
	byKey := map[string][]string{}
	for _, s := range streams {
		byKey[s.Source] = append(byKey[s.Source], s.Account)
	}
	fmt.Fprintf(w, "#\n# Streams (%d), per source with its resolved settings (comments, not read back):\n", len(streams))
	for _, spec := range catalog.Specs() {
		accounts, ok := byKey[spec.Name]
		if !ok {
			fmt.Fprintf(w, "#   %s: off\n", spec.Name)
			continue
		}
		r := cfg.Sources.Resolve(spec.Name)
		line, err := flowYAML([]any{
			"accounts", accounts, "start", r.Start, "lag", config.FormatDuration(r.Lag),
			"interval", intervalText(r.Interval), "max_window", config.FormatDuration(r.MaxWindow),
			"overlap", config.FormatDuration(r.Overlap), "filters", r.Filters, "returns", r.Returns,
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "#   %s: %s\n", spec.Name, line)
	}
	return nil
}

// flowYAML writes the key, value pairs kv as one YAML flow mapping, in
// their order, leaving out empty lists.
func flowYAML(kv []any) (string, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for i := 0; i+1 < len(kv); i += 2 {
		if v := reflect.ValueOf(kv[i+1]); v.Kind() == reflect.Slice && v.Len() == 0 {
			continue
		}
		var v yaml.Node
		if err := v.Encode(kv[i+1]); err != nil {
			return "", err
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(kv[i])}, &v)
	}
	b, err := yaml.Marshal(n)
	return strings.TrimSpace(string(b)), err
}

// checkSink checks that the sink sc can be reached (one of Config.Sinks).
func checkSink(ctx context.Context, sc config.SinkConfig, streams []record.Stream, o Options, timeout time.Duration, scr *secret.Scrubber) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch sc.Type {
	case config.SinkKafka:
		rep, err := kafka.Check(ctx, sc.Kafka, streams)
		fmt.Fprint(o.Stdout, scr.Scrub(rep.String()))
		return err
	case config.SinkClickHouse:
		s, err := clickhouse.New(sc.ClickHouse, prometheus.NewRegistry(), o.Log)
		if err != nil {
			return sc.KeyedError(err)
		}
		return s.Check(ctx)
	case config.SinkFile:
		return checkWritableDir(sc.File.Dir)
	}
	return nil
}

// checkWritableDir makes sure dir exists (creating it) and a file can be
// written there, without touching the files a running collector owns.
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".collector-check-*")
	if err != nil {
		return fmt.Errorf("directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// StateOptions select what the state command does.
type StateOptions struct {
	// Reset forgets the progress of SOURCE or SOURCE/ACCOUNT; the next run
	// starts that stream from its configured start.
	Reset string
	// Tenant is the configured tenant whose streams Reset forgets:
	// required with tenants, refused without.
	Tenant string
	// ExportTenant writes the progress of that tenant to the new file To;
	// Import adds the progress of such a file (Force: replacing the
	// tenant's progress the checkpoint holds); DropTenant removes a
	// tenant's progress. The collector must be stopped (docs/tenants.md,
	// "More collectors").
	ExportTenant, To string
	Import           string
	Force            bool
	DropTenant       string
	// JSON prints JSON instead of a table.
	JSON bool
	// Watch prints the states every Interval (default 2s) until ctx
	// ends: in place when Terminal, else one snapshot after another.
	Watch    bool
	Interval time.Duration
	Terminal bool
	// Notes receives where the states come from (standard error), so that
	// standard output holds only the table or the JSON; nil discards.
	Notes io.Writer
}

// State prints, per stream, the watermark, lag, window in flight, rows
// delivered, windows left and an estimated time to catch up. It asks a
// running collector (its /state endpoint on metrics.listen) first and reads
// the checkpoint file when none answers.
func State(ctx context.Context, cfg config.Config, o Options, so StateOptions) error {
	o = o.withDefaults()
	if so.Notes == nil {
		so.Notes = io.Discard
	}
	if so.Reset != "" {
		return reset(ctx, cfg, o, so.Tenant, so.Reset)
	}
	if so.ExportTenant != "" || so.Import != "" || so.DropTenant != "" {
		return moveTenant(ctx, cfg, o, so)
	}
	snap := func(ctx context.Context) ([]status.StreamState, string, error) { return states(ctx, cfg, o) }
	if so.Watch {
		return status.Watch(ctx, o.Stdout, so.Notes, status.WatchOptions{Every: so.Interval, JSON: so.JSON, Terminal: so.Terminal}, snap)
	}
	st, from, err := snap(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(so.Notes, "# %s\n", from)
	if sh, ok := cfg.Sharding(); ok {
		fmt.Fprintf(so.Notes, "# %s\n", sh)
	}
	return status.Print(o.Stdout, st, so.JSON)
}

// states returns the state lines now, from the running collector or else
// the checkpoint, and says which.
func states(ctx context.Context, cfg config.Config, o Options) ([]status.StreamState, string, error) {
	if live, err := status.Live(ctx, cfg.Metrics.Listen); err == nil {
		return live, "live, from the running collector at " + cfg.Metrics.Listen, nil
	}
	if cfg.OwnsNoTenant() {
		// The shard's line (State) says which shard and of how many.
		return nil, "this shard owns no tenant: it has no stream", nil
	}
	keys, err := configuredStreams(cfg)
	if err != nil {
		return nil, "", err
	}
	stored := map[record.Stream]checkpoint.State{}
	from := "no checkpoint at " + cfg.Checkpoint.Path + " yet: nothing collected"
	if _, err := os.Stat(cfg.Checkpoint.Path); err == nil {
		db, err := openCheckpoint(cfg, o.Log)
		if err != nil {
			return nil, "", err
		}
		defer db.Close()
		if stored, err = db.All(ctx); err != nil {
			return nil, "", err
		}
		from = "from the checkpoint " + cfg.Checkpoint.Path
		now := time.Now()
		// The estimates of a configuration of tenants take the first's.
		est := cfg.SourceConfigs()[0]
		st := status.FromCheckpoint(est, stored, keys, now)
		if err := status.AddRecheckPending(ctx, est, st, db.Windows, now); err != nil {
			return nil, "", err
		}
		return st, from, nil
	}
	return status.FromCheckpoint(cfg.SourceConfigs()[0], stored, keys, time.Now()), from, nil
}

// configuredStreams lists the streams the configuration defines. It needs
// no credentials: state and reset work with the secrets absent.
func configuredStreams(cfg config.Config) ([]record.Stream, error) {
	// With the simulator on, the edge streams are on: it serves the edge
	// API. With tenants, every tenant's streams.
	streams := tenantStreams(cfg.PlannedSourceConfigs())
	if len(streams) == 0 {
		return nil, errors.New("sources: no source enabled")
	}
	return streams, nil
}

// reset forgets the progress of what (SOURCE or SOURCE/ACCOUNT) of
// tenant, which must be a configured tenant with tenants and "" without:
// a tenant's streams are its own (docs/tenants.md), so a reset names
// whose it forgets.
func reset(ctx context.Context, cfg config.Config, o Options, tenant, what string) error {
	src, account, _ := strings.Cut(what, "/")
	if _, ok := catalog.LookupSpec(src); !ok {
		return fmt.Errorf("--reset %s: unknown source %q (%s)", what, src, strings.Join(catalog.SpecNames(), ", "))
	}
	var names []string
	for _, t := range cfg.Tenants {
		names = append(names, t.Name)
	}
	switch {
	case cfg.OwnsNoTenant():
		// Its empty tenants are not the one-tenant form: nothing of
		// "default" to forget (--drop-tenant removes a moved tenant's).
		return fmt.Errorf("--reset %s: this shard owns no tenant; reset on the shard that owns it (or --drop-tenant NAME here)", what)
	case tenant == "" && len(names) > 0:
		return fmt.Errorf("--reset %s: give --tenant NAME: each tenant has its own streams (%s)", what, strings.Join(names, ", "))
	case tenant != "" && len(names) == 0:
		return fmt.Errorf("--tenant %s: no tenants are configured (tenants:, docs/tenants.md)", tenant)
	case tenant != "" && !slices.Contains(names, tenant):
		return fmt.Errorf("--tenant: no tenant named %q (%s)", tenant, strings.Join(names, ", "))
	}
	if _, err := os.Stat(cfg.Checkpoint.Path); err != nil {
		return fmt.Errorf("--reset: no checkpoint at %s: %w", cfg.Checkpoint.Path, err)
	}
	db, err := openCheckpoint(cfg, o.Log)
	if err != nil {
		return fmt.Errorf("--reset needs the collector stopped: %w", err)
	}
	defer db.Close()
	n, err := db.Reset(ctx, tenant, src, account)
	if err != nil {
		return err
	}
	if tenant != "" {
		what += " of tenant " + tenant
	}
	fmt.Fprintf(o.Stdout, "reset %d stream(s) of %s; they start again from sources.%s.start on the next run\n", n, what, src)
	return nil
}

// moveTenant runs the export, import or drop of so on the checkpoint,
// which the collector must not hold.
func moveTenant(ctx context.Context, cfg config.Config, o Options, so StateOptions) error {
	if _, err := os.Stat(cfg.Checkpoint.Path); err != nil && so.Import == "" {
		return fmt.Errorf("no checkpoint at %s: %w", cfg.Checkpoint.Path, err)
	}
	db, err := openCheckpoint(cfg, o.Log)
	if err != nil {
		return fmt.Errorf("moving a tenant needs the collector stopped: %w", err)
	}
	defer db.Close()
	switch {
	case so.ExportTenant != "":
		m, err := db.ExportTenant(ctx, so.ExportTenant, so.To)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Stdout, "exported tenant %s: %d stream(s), %d key(s) to %s; nothing removed (--drop-tenant %s after the import)\n", m.Tenant, m.Streams, m.Keys, so.To, m.Tenant)
	case so.Import != "":
		m, err := db.ImportTenant(ctx, so.Import, so.Force)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Stdout, "imported tenant %s: %d stream(s), %d key(s) into %s\n", m.Tenant, m.Streams, m.Keys, cfg.Checkpoint.Path)
	default:
		m, err := db.DropTenant(ctx, so.DropTenant)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Stdout, "dropped tenant %s: %d stream(s), %d key(s) from %s\n", m.Tenant, m.Streams, m.Keys, cfg.Checkpoint.Path)
	}
	return nil
}

// intervalText writes a resolved interval as the configuration does:
// "auto" (the cadence from the budget) or the duration.
func intervalText(d time.Duration) string {
	if catalog.Interval(d) == catalog.IntervalAuto {
		return catalog.IntervalAuto.String()
	}
	return config.FormatDuration(d)
}
