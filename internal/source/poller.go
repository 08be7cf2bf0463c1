package source

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/backoff"
	"github.com/svcexport/collector/internal/clock"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/ratelog"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

// PollerConfig configures one poller: one source of one account.
type PollerConfig struct {
	// Tenant is the stream's tenant (catalog.Config.Tenant); "" for the
	// one-tenant form.
	Tenant string
	// Spec is the source.
	Spec catalog.Spec
	// Account is the stream's account: the sub-account, "org" or
	// "default" (C7), and the envelope account of its records. An edge
	// stream is one per edge token (C6: no account selection): Account is
	// edge.account, and each record's envelope account is its own
	// account_name when it has one.
	Account string
	// AccountHeader is sent as Account-Name; empty sends none (C2).
	AccountHeader string
	// OrgAccess sends Org-Access: true (C2: organization audit logs).
	OrgAccess bool
	// Settings are the resolved source settings; Interval 0 (auto) polls
	// at the cadence the budget allows (see MinCadence and Snapshot.Cadence).
	Settings catalog.SourceSettings
	// API holds the paging limits (page_rows, result_cap, max_pages,
	// next_page_ttl, max_history) and the retry backoff.
	API api.Config
	// Edge holds max_rows, the alert status filter and lookback (C6).
	Edge catalog.EdgeConfig
	// Once makes Run return once the stream caught up with now - lag as of
	// the start of Run.
	Once bool
	// Planner plans the windows; nil builds one with NewPlanner.
	Planner *window.Planner
	// MaxBatchRecords bounds the records of one cursor.Page handed to Emit and
	// the room reserved before a fetch; Build sets it from
	// Options.MaxBatchRecords (the app: pipeline.buffer_records). A page with more records (a server with
	// bigger pages than page_rows, an audit log or edge answer without
	// paging, C3 and C6) is emitted in several batches of at most this
	// many, built one at a time, so that memory stays bounded by
	// configuration. 0 (the default) bounds nothing.
	MaxBatchRecords int
	// Logger and Metrics may be nil.
	Logger  *slog.Logger
	Metrics *Metrics
	// Recheck says when to ask fetched windows again for late records
	// (C3, package recheck); the zero Config rechecks nothing.
	// RecheckLimiter keeps the rechecks of the stream's functionality
	// under their share of its budget and counts the streams that share
	// the bucket (one per functionality, told by the Set who shares it,
	// recheck.Limiter.Share; kept across reloads): the poll
	// cadence of interval auto is reckoned with it; nil: no rechecks, no
	// window log, and the stream paces as if it had its bucket alone.
	// RecheckMetrics may be nil. RecheckCounts are the stream's
	// delivered counts per minute (the checkpoint's): a recheck narrows
	// a grown window below its bounds with them; nil narrows nothing.
	Recheck        recheck.Config
	RecheckLimiter *recheck.Limiter
	RecheckMetrics *recheck.Metrics
	RecheckCounts  recheck.Counts
	// RecheckPool is what the streams of the source learn together of
	// the platform's delays (recheck: auto; Build gives the streams of
	// one source one pool); nil: the stream learns alone.
	RecheckPool *recheck.Pool
}

// Poller pulls one source of one account, window after window, and hands
// each page to its Output with the cursor that holds once it is delivered
// (DESIGN item 2). Run is not safe for concurrent use; Snapshot is.
type Poller struct {
	c    *api.Client
	cfg  PollerConfig
	plan window.Planner
	clk  clock.Clock
	log  *slog.Logger
	m    *Metrics
	eb   envelopeBuilder
	warn *ratelog.Limiter
	// rv does the rechecks and alert re-asks, and keeps the window log
	// and the alert tracker.
	rv *rechecks
	// st is the stream's progress, read by Snapshot at any time.
	st *state
}

// NewPoller returns the poller of cfg that fetches through c.
func NewPoller(c *api.Client, cfg PollerConfig) (*Poller, error) {
	if c == nil {
		return nil, errors.New("poller: nil client")
	}
	if cfg.Spec.Edge != (c.API() == "edge") {
		return nil, fmt.Errorf("poller %s: source needs the %s client", cfg.Spec.Name, map[bool]string{true: "edge", false: "core"}[cfg.Spec.Edge])
	}
	if cfg.Account == "" {
		cfg.Account = DefaultAccount
	}
	if cfg.Logger == nil {
		cfg.Logger = c.Logger()
	}
	if cfg.API.MaxPages <= 0 || cfg.API.PageRows <= 0 || cfg.API.ResultCap <= 0 || cfg.API.NextPageTTL <= 0 {
		return nil, fmt.Errorf("poller %s/%s: api paging limits not set", cfg.Spec.Name, cfg.Account)
	}
	if cfg.Spec.Edge && cfg.Edge.MaxRows <= 0 {
		return nil, fmt.Errorf("poller %s/%s: edge.max_rows not set", cfg.Spec.Name, cfg.Account)
	}
	if cfg.Settings.Interval < 0 {
		return nil, fmt.Errorf("poller %s/%s: negative interval", cfg.Spec.Name, cfg.Account)
	}
	cfg.Metrics.InitStream(cfg.Spec, cfg.Account)
	if cfg.RecheckLimiter != nil && cfg.Recheck.Enabled() {
		if err := cfg.Recheck.Validate(); err != nil {
			return nil, fmt.Errorf("poller %s/%s recheck: %w", cfg.Spec.Name, cfg.Account, err)
		}
	}
	// Every series at 0 from the start, rechecks on or off.
	cfg.RecheckMetrics.Observe(cfg.stream(), recheck.Result{})
	cfg.RecheckMetrics.SetPending(cfg.stream(), 0)
	cfg.RecheckMetrics.Expired(cfg.stream(), 0)
	c.InitFunctionality(cfg.Spec.Functionality)
	plan := catalog.NewPlanner(cfg.Spec, cfg.Settings, cfg.API, cfg.Edge)
	if cfg.Planner != nil {
		plan = *cfg.Planner
	}
	if err := plan.Validate(); err != nil {
		return nil, fmt.Errorf("poller %s/%s planner: %w", cfg.Spec.Name, cfg.Account, err)
	}
	p := &Poller{
		c: c, cfg: cfg, plan: plan, clk: c.Clock(), m: cfg.Metrics,
		log: cfg.Logger.With("source", cfg.Spec.Name, "account", cfg.Account),
	}
	if cfg.MaxBatchRecords < 0 {
		return nil, fmt.Errorf("poller %s/%s: negative MaxBatchRecords", cfg.Spec.Name, cfg.Account)
	}
	// Its own limiter, on the logger without the stream's attributes:
	// each line names its stream itself.
	p.warn = ratelog.New(cfg.Logger, p.clk.Now, c.WarnEvery())
	p.eb = envelopeBuilder{Tenant: cfg.Tenant, Source: cfg.Spec.Name, Account: cfg.Account, TimeField: cfg.Spec.TimeField, Metrics: p.m, Warn: p.warn,
		RecordAccount: cfg.Spec.Edge}
	p.rv = newRechecks(rechecksConfig{
		Stream: p.Stream(), Spec: cfg.Spec, Settings: cfg.Settings, API: cfg.API, Edge: cfg.Edge, Plan: plan,
		Recheck: cfg.Recheck, Limiter: cfg.RecheckLimiter, RecheckMetrics: cfg.RecheckMetrics, Counts: cfg.RecheckCounts,
		Pool: cfg.RecheckPool, Metrics: cfg.Metrics, Logger: p.log, Clock: p.clk,
	})
	p.st = newState(p.Stream())
	p.m.Limits(cfg.Spec.Name, cfg.Account, window.Limits{}, p.splitAt())
	p.pace()
	return p, nil
}

// DefaultAccount is the envelope account when no account is configured:
// the token's own account (C2).
const DefaultAccount = "default"

// maxPageRows is the most records one answer of the source should hold by
// configuration (api.page_rows, edge.max_rows).
func (p *Poller) maxPageRows() int {
	if p.cfg.Spec.Edge {
		return p.cfg.Edge.MaxRows
	}
	return p.cfg.API.PageRows
}

// reservation is the room reserved before a fetch: the configured page
// size or the largest page seen, whichever is larger (a server may send
// bigger pages than page_rows says), at most MaxBatchRecords, the most one
// Emit takes.
func (p *Poller) reservation() int {
	n := max(p.maxPageRows(), p.st.PageRowsSeen())
	if m := p.cfg.MaxBatchRecords; m > 0 {
		n = min(n, m)
	}
	return n
}

// Stream returns the poller's stream: its tenant, source and envelope
// account.
func (p *Poller) Stream() record.Stream { return p.cfg.stream() }

// errCaughtUp ends a Once run.
var errCaughtUp = errors.New("caught up")

// Run pulls the stream from cursor on and hands every page to out, in
// order, each with the cursor that holds once it is delivered; room for
// each page is reserved with out.Reserve once the budget admitted its
// request, before it is sent (DESIGN item 5). A zero
// cursor starts at the source's configured start; a cursor with a chain in
// flight continues it (C3). Transient failures are retried after a backoff
// and never end Run. An error that repeating the request cannot cure (C5:
// 400, 403, 404 but a next-page expiry, 405, 409; an origin refused)
// blocks the stream: it is logged, counted, shown in the Snapshot and in
// collector_stream_blocked, and asked again only every
// api.permanent_error_retry (a permission can be granted later); in Once
// mode it ends Run with the error, so a batch run fails loudly naming the
// stream instead of hanging. Run returns ctx's error when ctx ends, an
// error of out.Emit (wrapped) when the pipeline refuses a page, or nil in
// Once mode once the stream caught up with now - lag as of when Run
// started. Run must not be called concurrently on one Poller; a Poller may
// be run again after Run returned (it keeps its learnt limits, density and
// alert tracker).
func (p *Poller) Run(ctx context.Context, from cursor.Cursor, out Output) error {
	started := p.clk.Now()
	if from.Watermark.IsZero() {
		st, clamped, err := p.plan.Start(p.cfg.Settings.Start, started)
		if err != nil {
			return fmt.Errorf("%s/%s start: %w", p.cfg.Spec.Name, p.cfg.Account, err)
		}
		if clamped {
			p.log.Warn("configured start is older than the API reaches; starting at the oldest reachable time",
				"start", p.cfg.Settings.Start, "watermark", record.FormatTime(st))
		}
		from.Watermark, from.Start = st, st
		p.rv.StartAt(st)
	}
	p.rv.Load(from.Log, from.Alerts, from.Delays)
	if from.Density > 0 && p.st.Density() == 0 {
		p.st.SetDensity(from.Density)
	}
	if from.Limits != (window.Limits{}) {
		p.learn(func(l *window.Limits) bool { l.Adopt(from.Limits); return true })
	}
	r := &run{p: p, cur: from, out: out, started: started, start: from.Start, inv: from.Inventory}
	p.st.Begin(started, from)
	p.pace()
	if !p.cfg.Once {
		// A small deterministic offset per stream, so that pollers do
		// not all start at once (STYLE item 5).
		if err := clock.Sleep(ctx, p.clk, p.startOffset()); err != nil {
			return err
		}
	}
	failures := 0
	for {
		// The cadence follows the bucket: its learnt limit and the
		// streams that share it.
		p.pace()
		err := r.step(ctx)
		switch {
		case err == nil:
			if failures > 0 {
				p.unblock()
			}
			failures = 0
			continue
		case errors.Is(err, errCaughtUp):
			p.unblock()
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, new(*emitError)):
			// The pipeline refused a page: retrying cannot help.
			return err
		}
		kind := errorKind(err)
		p.m.PollError(p.cfg.Spec.Name, p.cfg.Account, kind)
		p.st.NoteError(err, p.clk.Now())
		failures++
		wait := p.failureWait(failures)
		reason, blocked := blocking(err)
		if blocked {
			// C5: the same request would get the same answer. Out of
			// the fast loop; asked again at a slow pace.
			wait = p.cfg.API.PermanentErrorRetry
			if p.block(reason, err) || p.cfg.Once {
				p.log.Error("stream blocked: its requests are refused with an error a retry cannot cure", "kind", kind, "reason", reason,
					"window_start", windowStart(r.cur), "retry_in", wait.String(), "err", err.Error())
			} else {
				p.log.Warn("stream still blocked", "reason", reason, "retry_in", wait.String(), "err", err.Error())
			}
		} else {
			p.log.Error("poll failed", "kind", kind, "window_start", windowStart(r.cur), "retry_in", wait.String(), "err", err.Error())
		}
		if p.cfg.Once && api.IsPermanent(err) {
			return err
		}
		// The room reserved for the page that failed goes back while
		// the stream waits (Output.Reserve).
		if err := out.Reserve(ctx, 0); err != nil {
			return err
		}
		if err := clock.Sleep(ctx, p.clk, wait); err != nil {
			return err
		}
	}
}

func windowStart(c cursor.Cursor) string {
	if c.InFlight != nil {
		return record.FormatTime(c.InFlight.Window.Start)
	}
	return record.FormatTime(c.Watermark)
}

// failureWait is the backoff after n failed polls in a row: exponential from
// retry.initial (at least 1ms) up to max(retry.max, cadence), with equal
// jitter so that it is never near zero.
func (p *Poller) failureWait(n int) time.Duration {
	return backoff.Policy{
		Initial: max(p.cfg.API.Retry.Initial, time.Millisecond),
		Max:     max(p.cfg.API.Retry.Max, p.cadence()),
		Jitter:  backoff.Equal,
	}.Wait(n - 1)
}

func (p *Poller) startOffset() time.Duration {
	h := fnv.New64a()
	// Stream's String: "source/account" as ever, the tenant in front of
	// a named tenant's, so that tenants' streams of one source and
	// account do not all start at once.
	h.Write([]byte(p.Stream().String()))
	span := min(p.cadence()/2, 15*time.Second)
	if span <= 0 {
		return 0
	}
	return time.Duration(h.Sum64() % uint64(span))
}
