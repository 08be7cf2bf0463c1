package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/verify"
	"github.com/svcexport/collector/internal/verify/apicount"
)

// VerifyOptions select what the verify command re-counts and how.
type VerifyOptions struct {
	// Source and Account keep only the streams of that source or account
	// ("" keeps every one).
	Source, Account string
	// Tenant keeps only the streams of that configured tenant, verified
	// against its own API with its own key; "" verifies every tenant,
	// each against its own, reported under its name (docs/tenants.md).
	Tenant string
	// From and To bound the verified record times; zero From is where
	// the stream began (kept in the checkpoint), zero To its watermark.
	From, To time.Time
	// Sink names the sink to count in (Config.Sinks); "" takes the only
	// one.
	Sink string
	// JSON prints the report (or, with DryRun, the plan) as JSON on
	// standard output.
	JSON bool
	// DryRun prints the plan and its cost and asks nothing of the API.
	DryRun bool
	// Yes asks the API without a confirmation.
	Yes bool
	// Stdin is where the confirmation is read, Interactive whether it is
	// a terminal: without Yes, a Stdin that is no terminal is refused.
	Stdin       io.Reader
	Interactive bool
	// Notes receives the plan, the budget warning and the prompt
	// (standard error), so that standard output holds only the report;
	// nil discards.
	Notes io.Writer
}

// Exit statuses of Verify.
const (
	// VerifyOK: no (stream, day) has a gap.
	VerifyOK = 0
	// VerifyGap: some (stream, day) has a gap, or verify failed.
	VerifyGap = 1
	// VerifyUsage: a bad flag, a sink that cannot be counted, or no
	// confirmation.
	VerifyUsage = 2
)

// ErrNotConfirmed is returned by Verify when the requests were not
// confirmed.
var ErrNotConfirmed = errors.New("verify: not confirmed")

// ErrGap is returned by Verify, with VerifyGap, when a day has a gap; the
// error says how many, the report which.
var ErrGap = errors.New("see the report")

// Verify re-counts the committed windows of the checkpoint against the API
// and compares, per (stream, UTC day), with what the chosen sink
// delivered (package verify). It reads the checkpoint without writing to
// it (from a copy when a running collector holds it), prints the plan and
// its cost in requests per rate bucket (C4: the buckets a running
// collector spends too), asks for a confirmation unless vo.Yes, then
// counts and prints the report. It returns the exit status (VerifyOK,
// VerifyGap, VerifyUsage) and, when it is not VerifyOK, an error that
// says why (for a gap, ErrGap with the count of days and records).
func Verify(ctx context.Context, cfg config.Config, o Options, vo VerifyOptions) (int, error) {
	o = o.withDefaults()
	notes := vo.Notes
	if notes == nil {
		notes = io.Discard
	}
	if vo.Source != "" {
		if _, ok := catalog.LookupSpec(vo.Source); !ok {
			return VerifyUsage, fmt.Errorf("--source: unknown source %q (%s)", vo.Source, strings.Join(catalog.SpecNames(), ", "))
		}
	}
	if !vo.From.IsZero() && !vo.To.IsZero() && !vo.To.After(vo.From) {
		return VerifyUsage, fmt.Errorf("--to %s is not after --from %s", vo.To.Format(time.RFC3339), vo.From.Format(time.RFC3339))
	}
	sc, err := verifySink(cfg, vo.Sink)
	if err != nil {
		return VerifyUsage, err
	}
	snap, err := checkpoint.ReadSnapshot(ctx, cfg.Checkpoint.Path, time.Second)
	if errors.Is(err, fs.ErrNotExist) {
		return VerifyGap, fmt.Errorf("no checkpoint at %s (checkpoint.path): nothing was collected yet", cfg.Checkpoint.Path)
	}
	if err != nil {
		return VerifyGap, err
	}
	if snap.Copied {
		fmt.Fprintf(notes, "# a running collector holds %s: read from a copy of it\n", cfg.Checkpoint.Path)
	}
	tenants, err := verifyTenants(cfg, vo.Tenant)
	if err != nil {
		return VerifyUsage, err
	}
	// One plan per tenant: each has its own streams, history limit, result
	// cap and rate buckets (C4), spent of its own key.
	filter := verify.Filter{Source: vo.Source, Account: vo.Account, From: vo.From, To: vo.To}
	now := time.Now()
	plans := make([]verify.Plan, len(tenants))
	costs := make([][]bucketCost, len(tenants))
	var plan verify.Plan // every tenant's: the sink counts them all
	for i, tc := range tenants {
		infos, skipped := streamInfos(tc, snap)
		p := verify.NewPlan(infos, filter, verify.Limits{
			Now: now, MaxHistory: tc.API.MaxHistory, CountCap: catalog.ResultCap(tc.API), EdgeMaxRows: int64(tc.Edge.MaxRows),
		})
		p.Notes = append(skipped, p.Notes...)
		plans[i], costs[i] = p, planCost(p, tc)
		plan.Targets = append(plan.Targets, p.Targets...)
		plan.Requests += p.Requests
		plan.Notes = append(plan.Notes, p.Notes...)
	}

	if vo.DryRun {
		if vo.JSON {
			return VerifyOK, writePlansJSON(o.Stdout, tenants, plans, costs)
		}
		writePlans(o.Stdout, tenants, plans, costs)
		fmt.Fprintln(o.Stdout, "dry run: nothing was asked of the API")
		return VerifyOK, nil
	}
	writePlans(notes, tenants, plans, costs)
	if len(plan.Targets) == 0 {
		return VerifyUsage, errors.New("nothing to verify: no (stream, day) matches (see the notes above)")
	}
	if !vo.Yes {
		if !vo.Interactive || vo.Stdin == nil {
			return VerifyUsage, fmt.Errorf("%w: standard input is not a terminal; give --yes to spend about %d requests, or --dry-run to see the plan only", ErrNotConfirmed, plan.Requests)
		}
		fmt.Fprintf(notes, "Spend about %d API requests now? [y/N] ", plan.Requests)
		line, _ := bufio.NewReader(vo.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return VerifyUsage, fmt.Errorf("%w: nothing was asked of the API", ErrNotConfirmed)
		}
	}

	delivered, closeSink, err := deliveredOf(sc, plan, o)
	if err != nil {
		return VerifyUsage, err
	}
	defer closeSink()

	resolved := tenants
	if len(cfg.Tenants) == 0 {
		one, sim, err := resolveSource(cfg, o.Log)
		if err != nil {
			return VerifyGap, err
		}
		if sim != nil {
			defer sim.Close()
		}
		resolved = []catalog.Config{one}
	}
	// The process's one scrubber, as run and check have: a server that
	// echoes a secret in an error does not print it here either (any
	// tenant's, as in run).
	scr := newTenantsScrubber(cfg, resolved, os.Getenv)
	began := time.Now()
	var rep verify.Report
	requests := 0
	for i, tc := range resolved {
		if len(plans[i].Targets) == 0 {
			continue
		}
		counter, err := apicount.New(tc, api.Options{Logger: tenantLog(o.Log, tc.Tenant), Scrubber: scr})
		if err != nil {
			return VerifyGap, err
		}
		r, err := verify.Run(ctx, plans[i], verify.Splitting(counter, time.Second), delivered)
		requests += counter.Requests()
		if err != nil {
			if api.IsUnreachable(err) {
				// Worded as tap says it of the collector, check of an
				// address it probes.
				err = fmt.Errorf("the API cannot be reached: %w", err)
			}
			if tc.Tenant != "" {
				err = fmt.Errorf("tenant %s: %w", tc.Tenant, err)
			}
			return VerifyGap, err
		}
		rep.Merge(r)
	}
	o.Log.Info("verify done", "targets", len(plan.Targets), "requests", requests, "planned", plan.Requests,
		"took", time.Since(began).Round(time.Millisecond), "gaps", rep.Gaps, "missing", rep.Missing)
	rep.Requests = requests
	if vo.JSON {
		err = rep.WriteJSON(o.Stdout)
	} else {
		err = rep.WriteTable(o.Stdout)
		writeGapNotes(o.Stdout, rep, sc.SinkName())
	}
	if err != nil {
		return VerifyGap, err
	}
	if code := rep.ExitCode(); code != VerifyOK {
		days := "days"
		if rep.Gaps == 1 {
			days = "day"
		}
		return code, fmt.Errorf("%d %s with a gap, %d records missing: %w", rep.Gaps, days, rep.Missing, ErrGap)
	}
	return VerifyOK, nil
}

// verifyTenants are the configurations of the tenants to verify: the one
// named (an error names the configured ones), or every one; without
// tenants, the one-tenant form's (and --tenant is an error).
func verifyTenants(cfg config.Config, name string) ([]catalog.Config, error) {
	all := cfg.SourceConfigs()
	if name == "" {
		return all, nil
	}
	if len(cfg.Tenants) == 0 {
		return nil, fmt.Errorf("--tenant %s: no tenants are configured (tenants:, docs/tenants.md)", name)
	}
	var names []string
	for _, tc := range all {
		if tc.Tenant == name {
			return []catalog.Config{tc}, nil
		}
		names = append(names, tc.Tenant)
	}
	return nil, fmt.Errorf("--tenant: no tenant named %q (%s)", name, strings.Join(names, ", "))
}

// tenantLog is log with the attribute tenant, as the tenant's pollers log
// (the one-tenant form: log).
func tenantLog(log *slog.Logger, tenant string) *slog.Logger {
	if tenant == "" {
		return log
	}
	return log.With("tenant", tenant)
}

// verifySink is the sink to count in: the one named, or the only one. A
// stdout sink keeps nothing to count.
func verifySink(cfg config.Config, name string) (config.SinkConfig, error) {
	sinks := cfg.Sinks()
	var names []string
	for _, s := range sinks {
		names = append(names, s.SinkName())
	}
	var sc config.SinkConfig
	switch i := slices.Index(names, name); {
	case name == "" && len(sinks) == 1:
		sc = sinks[0]
	case name == "":
		return sc, fmt.Errorf("--sink: %d sinks are configured; name the one to count in (%s)", len(sinks), strings.Join(names, ", "))
	case i < 0:
		return sc, fmt.Errorf("--sink: no sink named %q (%s)", name, strings.Join(names, ", "))
	default:
		sc = sinks[i]
	}
	if sc.Type == config.SinkStdout {
		return sc, fmt.Errorf("sink %s: a stdout sink keeps nothing to count; verify counts in a file, Kafka or ClickHouse sink", sc.SinkName())
	}
	return sc, nil
}

// streamInfos is what the plan knows of every stream of the snapshot of
// cfg's tenant (cfg.Tenant; "" the one-tenant form); a stream of an
// unknown source is left out with a note.
func streamInfos(cfg catalog.Config, snap checkpoint.Snapshot) ([]verify.StreamInfo, []string) {
	var out []verify.StreamInfo
	var notes []string
	for k, st := range snap.States {
		if k.Tenant != cfg.Tenant {
			continue
		}
		spec, ok := catalog.LookupSpec(k.Source)
		if !ok {
			notes = append(notes, fmt.Sprintf("%s: not a source of this collector: left out", k))
			continue
		}
		r := cfg.Sources.Resolve(k.Source)
		start := st.Start
		if start.IsZero() {
			start = absoluteStart(r.Start)
		}
		out = append(out, verify.StreamInfo{Stream: k, Edge: spec.Edge, Start: start,
			State: st, Windows: snap.Windows[k], RecheckLast: r.RecheckConfig(0).Last()})
	}
	return out, notes
}

// absoluteStart is sources.*.start when it is a time or a date (RFC 3339
// or YYYY-MM-DD); zero when it is relative ("24h", "max"): relative to the
// stream's first run, which a checkpoint written before the collector
// kept each stream's start does not hold.
func absoluteStart(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// bucketCost is what a plan spends of one rate bucket (C4).
type bucketCost struct {
	Functionality string `json:"functionality"`
	Requests      int    `json:"requests"`
	// Limit per Period is the bucket; Usable is Limit less the reserve.
	Limit  int           `json:"limit"`
	Period time.Duration `json:"period_ns"`
	Usable int           `json:"usable"`
}

// planCost sums the plan's requests per rate bucket.
func planCost(p verify.Plan, cfg catalog.Config) []bucketCost {
	by := map[string]int{}
	for _, t := range p.Targets {
		spec, _ := catalog.LookupSpec(t.Stream.Source)
		by[spec.Functionality] += t.Parts
	}
	var out []bucketCost
	for fn, n := range by {
		r := cfg.API.Rate
		if fn == "edge" {
			r = cfg.Edge.Rate
		}
		out = append(out, bucketCost{Functionality: fn, Requests: n, Limit: r.Limit, Period: r.Period,
			Usable: int(float64(r.Limit) * (1 - r.Reserve))})
	}
	slices.SortFunc(out, func(a, b bucketCost) int { return strings.Compare(a.Functionality, b.Functionality) })
	return out
}

// writePlan prints the dry run: targets, requests per bucket against the
// bucket, and the warning that they are the buckets a running collector
// spends.
func writePlan(w io.Writer, p verify.Plan, cost []bucketCost) {
	fmt.Fprint(w, p.String())
	if len(cost) == 0 {
		return
	}
	fmt.Fprintln(w, "requests per rate bucket (C4):")
	over := false
	for _, c := range cost {
		fmt.Fprintf(w, "  %-17s %5d of %d per %s (%d usable after the reserve)\n", c.Functionality, c.Requests, c.Limit, config.FormatDuration(c.Period), c.Usable)
		if c.Requests > c.Usable {
			over = true
			fmt.Fprintf(w, "    more than a full bucket: verify waits for tokens, about %s for this bucket\n",
				config.FormatDuration((time.Duration(c.Requests-c.Usable) * c.Period / time.Duration(max(c.Usable, 1))).Round(time.Minute)))
		}
	}
	fmt.Fprintln(w, "warning: these are the buckets a running collector spends (C4): while verify asks, the collector's windows wait for the same tokens")
	if over {
		fmt.Fprintln(w, "warning: give --source, --account, --from or --to to verify less at a time")
	}
}

// writePlans is writePlan of each tenant's plan, under a line naming the
// tenant (none in the one-tenant form).
func writePlans(w io.Writer, tenants []catalog.Config, plans []verify.Plan, costs [][]bucketCost) {
	for i, tc := range tenants {
		if tc.Tenant != "" {
			fmt.Fprintf(w, "tenant %s: ", tc.Tenant)
		}
		writePlan(w, plans[i], costs[i])
	}
}

// writePlansJSON prints the dry run as one JSON object: in the one-tenant
// form the plan (writePlanJSON), with tenants {"tenants": [{"tenant":
// NAME, plan...}, ...]}.
func writePlansJSON(w io.Writer, tenants []catalog.Config, plans []verify.Plan, costs [][]bucketCost) error {
	if len(tenants) == 1 && tenants[0].Tenant == "" {
		return writePlanJSON(w, plans[0], costs[0])
	}
	out := struct {
		Tenants []planJSON `json:"tenants"`
	}{Tenants: []planJSON{}}
	for i, tc := range tenants {
		pj := newPlanJSON(plans[i], costs[i])
		pj.Tenant = tc.Tenant
		out.Tenants = append(out.Tenants, pj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// planJSON is a plan as the dry run prints it.
type planJSON struct {
	Tenant   string       `json:"tenant,omitempty"`
	Targets  []targetJSON `json:"targets"`
	Requests int          `json:"requests"`
	Buckets  []bucketCost `json:"buckets"`
	Notes    []string     `json:"notes"`
}

type targetJSON struct {
	Source  string    `json:"source"`
	Account string    `json:"account"`
	Day     string    `json:"day"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	EstRows int64     `json:"estimated_rows"`
	Parts   int       `json:"requests"`
}

func newPlanJSON(p verify.Plan, cost []bucketCost) planJSON {
	out := planJSON{Targets: []targetJSON{}, Requests: p.Requests, Buckets: cost, Notes: p.Notes}
	for _, t := range p.Targets {
		out.Targets = append(out.Targets, targetJSON{Source: t.Stream.Source, Account: t.Stream.Account, Day: t.Day.Format(time.DateOnly),
			Start: t.Start, End: t.End, EstRows: t.EstRows, Parts: t.Parts})
	}
	if out.Buckets == nil {
		out.Buckets = []bucketCost{}
	}
	return out
}

// writePlanJSON prints the dry run as one JSON object.
func writePlanJSON(w io.Writer, p verify.Plan, cost []bucketCost) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(newPlanJSON(p, cost))
}

// writeGapNotes says, under the table, what the gaps mean.
func writeGapNotes(w io.Writer, r verify.Report, sink string) {
	for _, row := range r.Rows {
		if row.Status != verify.StatusGap {
			continue
		}
		why := "no recheck to come: lost, unless the sink is still being written (see docs/verify.md)"
		switch {
		case row.Cause == verify.CauseLate:
			why = fmt.Sprintf("late data: %d of the %d windows of the day with a recheck to come grew since they were fetched; the gap may close", row.Grown, row.Pending)
		case row.Cause == verify.CauseCutShort:
			why = fmt.Sprintf("cut short: none of the %d windows of the day with a recheck to come grew since they were fetched, so no recheck will close the gap; "+
				"the records were missing when the windows were fetched (see docs/verify.md)", row.Pending)
		}
		who := ""
		if row.Tenant != "" {
			who = "tenant " + row.Tenant + " "
		}
		fmt.Fprintf(w, "gap: %s%s/%s %s: the API has %d records, sink %s holds %d: %d missing (%s)\n",
			who, row.Source, row.Account, row.Day, row.API, sink, row.Delivered, row.API-row.Delivered, why)
	}
}

// streamsOf are the distinct streams of the plan's targets.
func streamsOf(p verify.Plan) []record.Stream {
	var out []record.Stream
	for _, t := range p.Targets {
		if !slices.Contains(out, t.Stream) {
			out = append(out, t.Stream)
		}
	}
	return out
}

// deliveredOf is the counter of what sink sc delivered, and what closes
// it. The Kafka sink names a topic after the stream (an edge stream: its
// edge.account, C6), so the plan's streams name every topic to read.
func deliveredOf(sc config.SinkConfig, p verify.Plan, o Options) (verify.Delivered, func(), error) {
	switch sc.Type {
	case config.SinkFile:
		return verify.FileSink{Dir: sc.File.Dir, Path: sc.File.Path}, func() {}, nil
	case config.SinkClickHouse:
		conn, names, err := clickhouse.OpenReader(sc.ClickHouse)
		if err != nil {
			return nil, nil, sc.KeyedError(err)
		}
		return verify.ClickHouse{Conn: conn, Names: names, Timeout: sc.ClickHouse.QueryTimeout}, func() { _ = conn.Close() }, nil
	case config.SinkKafka:
		opts, topics, err := kafka.ReaderOpts(sc.Kafka, streamsOf(p), o.Log)
		if err != nil {
			return nil, nil, sc.KeyedError(err)
		}
		return verify.Kafka{Opts: opts, Topics: topics}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("sink %s: verify cannot count in a %s sink", sc.SinkName(), sc.Type)
}
