package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/api/origin"
	"github.com/svcexport/collector/internal/backoff"
	"github.com/svcexport/collector/internal/ratelog"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

// PollerConfig configures one poller: one source of one account.
type PollerConfig struct {
	// Spec is the source.
	Spec catalog.Spec
	// Account is the envelope account: the sub-account, "org" or
	// "default" (C7).
	Account string
	// AccountHeader is sent as Account-Name; empty sends none (C2).
	AccountHeader string
	// OrgAccess sends Org-Access: true (C2: organization audit logs).
	OrgAccess bool
	// Settings are the resolved source settings.
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
	// MaxBatchRecords bounds the records of one Page handed to Emit and
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
}

// Poller pulls one source of one account, window after window, and hands
// each page to its Output with the cursor that holds once it is delivered
// (DESIGN item 2). Run is not safe for concurrent use; Snapshot is.
type Poller struct {
	c       *api.Client
	cfg     PollerConfig
	plan    window.Planner
	clk     api.Clock
	log     *slog.Logger
	m       *Metrics
	eb      envelopeBuilder
	splitAt int64
	alerts  *alertTracker
	warn    *ratelog.Limiter

	mu   sync.Mutex
	snap Snapshot
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
	if cfg.Settings.Interval <= 0 {
		return nil, fmt.Errorf("poller %s/%s: interval not set", cfg.Spec.Name, cfg.Account)
	}
	cfg.Metrics.initStream(cfg.Spec, cfg.Account)
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
		// C3: a result set stops at result_cap rows or max_pages pages,
		// whichever comes first; a window that may hold more is split.
		splitAt: catalog.ResultCap(cfg.API),
	}
	if cfg.MaxBatchRecords < 0 {
		return nil, fmt.Errorf("poller %s/%s: negative MaxBatchRecords", cfg.Spec.Name, cfg.Account)
	}
	// Its own limiter, on the logger without the stream's attributes:
	// each line names its stream itself.
	p.warn = ratelog.New(cfg.Logger, p.clk.Now, c.WarnEvery())
	p.eb = envelopeBuilder{source: cfg.Spec.Name, account: cfg.Account, timeField: cfg.Spec.TimeField, log: p.log, m: p.m, warn: p.warn}
	if cfg.Spec.Name == catalog.SourceEdgeAlerts && cfg.Edge.AlertUpdateLookback > 0 {
		p.alerts = newAlertTracker(cfg.Edge.AlertUpdateLookback)
	}
	p.snap = Snapshot{Stream: p.Stream()}
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
	n := max(p.maxPageRows(), p.pageRowsSeen())
	if m := p.cfg.MaxBatchRecords; m > 0 {
		n = min(n, m)
	}
	return n
}

// Stream returns the poller's stream: its source and envelope account.
func (p *Poller) Stream() record.Stream {
	return record.Stream{Source: p.cfg.Spec.Name, Account: p.cfg.Account}
}

// errCaughtUp ends a Once run.
var errCaughtUp = errors.New("caught up")

// Run pulls the stream from cursor on and hands every page to out, in
// order, each with the cursor that holds once it is delivered; room for
// each page is reserved with out.Reserve once the budget admitted its
// request, before it is sent (DESIGN item 5). A zero
// cursor starts at the source's configured start; a cursor with a chain in
// flight continues it (C3). Transient failures are retried and never end
// Run; a permanent failure is logged, counted and retried after a backoff
// (in Once mode it ends Run with the error, so a batch run fails loudly
// instead of hanging). Run returns ctx's error when ctx ends, an error of
// out.Emit (wrapped) when the pipeline refuses a page, or nil in Once mode once
// the stream caught up with now - lag as of when Run started. Run must not
// be called concurrently on one Poller; a Poller may be run again after
// Run returned (it keeps its learned density and alert tracker).
func (p *Poller) Run(ctx context.Context, cursor Cursor, out Output) error {
	started := p.clk.Now()
	if cursor.Watermark.IsZero() {
		st, clamped, err := p.plan.Start(p.cfg.Settings.Start, started)
		if err != nil {
			return fmt.Errorf("%s/%s start: %w", p.cfg.Spec.Name, p.cfg.Account, err)
		}
		if clamped {
			p.log.Warn("configured start is older than the API reaches; starting at the oldest reachable time",
				"start", p.cfg.Settings.Start, "watermark", record.FormatTime(st))
		}
		cursor.Watermark = st
		if p.alerts != nil {
			// A new stream has seen nothing before its start: re-asks
			// begin there too. A resumed stream re-asks its whole
			// lookback, as it may have missed updates while down.
			p.alerts.from = st
		}
	}
	if cursor.Density > 0 && p.density() == 0 {
		p.setDensity(cursor.Density)
	}
	r := &run{p: p, cur: cursor, out: out, started: started}
	p.begin(started, cursor)
	if !p.cfg.Once {
		// A small deterministic offset per stream, so that pollers do
		// not all start at once (STYLE item 5).
		if err := api.Sleep(ctx, p.clk, p.startOffset()); err != nil {
			return err
		}
	}
	failures := 0
	for {
		err := r.step(ctx)
		switch {
		case err == nil:
			failures = 0
			continue
		case errors.Is(err, errCaughtUp):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, new(*emitError)):
			// The pipeline refused a page: retrying cannot help.
			return err
		}
		kind := errorKind(err)
		p.m.pollError(p.cfg.Spec.Name, p.cfg.Account, kind)
		p.noteError(err)
		failures++
		wait := p.failureWait(failures)
		p.log.Error("poll failed", "kind", kind, "window_start", windowStart(r.cur), "retry_in", wait.String(), "err", err.Error())
		if p.cfg.Once && api.IsPermanent(err) {
			return err
		}
		if err := api.Sleep(ctx, p.clk, wait); err != nil {
			return err
		}
	}
}

func windowStart(c Cursor) string {
	if c.InFlight != nil {
		return record.FormatTime(c.InFlight.Window.Start)
	}
	return record.FormatTime(c.Watermark)
}

// failureWait is the backoff after n failed polls in a row: exponential from
// retry.initial (at least 1ms) up to max(retry.max, interval), with equal
// jitter so that it is never near zero.
func (p *Poller) failureWait(n int) time.Duration {
	return backoff.Policy{
		Initial: max(p.cfg.API.Retry.Initial, time.Millisecond),
		Max:     max(p.cfg.API.Retry.Max, p.cfg.Settings.Interval),
		Jitter:  backoff.Equal,
	}.Wait(n - 1)
}

func (p *Poller) startOffset() time.Duration {
	h := fnv.New64a()
	h.Write([]byte(p.cfg.Spec.Name + "/" + p.cfg.Account))
	span := min(p.cfg.Settings.Interval/2, 15*time.Second)
	if span <= 0 {
		return 0
	}
	return time.Duration(h.Sum64() % uint64(span))
}

// errorKind is the kind label of collector_poll_errors_total.
func errorKind(err error) string {
	var se *api.StatusError
	switch {
	case errors.As(err, new(*origin.Error)):
		return "origin"
	case api.IsBodyTooLarge(err):
		return "body_too_large"
	case errors.As(err, &se) && se.Status == 401:
		return "auth"
	case errors.As(err, &se) && se.Status == 403:
		return "forbidden"
	case errors.As(err, &se) && se.Status == 400:
		return "bad_request"
	case api.IsNextPageExpired(err):
		return "nextpage_expired"
	case api.IsPermanent(err):
		return "permanent"
	default:
		return "transient"
	}
}

// run is the state of one Run call.
type run struct {
	p                 *Poller
	cur               Cursor
	out               Output
	started           time.Time
	warnedUnreachable bool
}

// step does one unit of work: resume the chain in flight, process the next
// window, or, when caught up, re-ask alert updates and wait one interval.
func (r *run) step(ctx context.Context) error {
	p := r.p
	if r.cur.InFlight != nil {
		return r.resume(ctx)
	}
	now := p.clk.Now()
	planNow := now
	if p.cfg.Once {
		planNow = r.started
	}
	if u, ok := p.plan.Unreachable(r.cur.Watermark, planNow); ok && !r.warnedUnreachable {
		// C3 max_history: the API no longer serves this time. Never
		// silent: logged and counted once per run.
		r.warnedUnreachable = true
		p.m.pollError(p.cfg.Spec.Name, p.cfg.Account, "unreachable")
		p.log.Error("time older than max_history is no longer served and is skipped",
			"window_start", record.FormatTime(u.Start), "window_end", record.FormatTime(u.End))
	}
	w, ok := p.plan.Next(r.cur.Watermark, planNow, p.density())
	if ok {
		return r.window(ctx, w)
	}
	p.caughtUp(true)
	if p.alerts != nil {
		if err := r.revisitAlerts(ctx); err != nil {
			return err
		}
	}
	if p.cfg.Once {
		return errCaughtUp
	}
	return api.Sleep(ctx, p.clk, p.cfg.Settings.Interval)
}

// maxRestarts bounds the next-page restarts of one window in a row; past it
// the poll fails (counted, logged) and is retried after a backoff.
const maxRestarts = 5

// window fetches window w completely: its first page, a split when the
// result set may be truncated (C3, C6), then its next-page chain.
func (r *run) window(ctx context.Context, w window.Window) error {
	p := r.p
	for restarts := 0; ; restarts++ {
		first, err := r.fetch(ctx, w, "", 0)
		if api.IsBodyTooLarge(err) {
			return r.splitTooLarge(ctx, w, err, r.window)
		}
		if err != nil {
			return err
		}
		rows := int64(len(first.body.Records))
		if first.body.HasPaging {
			rows = max(rows, first.body.TotalRows)
		}
		p.setDensity(window.Density(p.density(), rows, w.Duration()))
		if parts, ok := r.splitIfFull(w, first); ok {
			for _, part := range parts {
				if err := r.window(ctx, part); err != nil {
					return err
				}
			}
			return nil
		}
		err = r.walk(ctx, w, first, Chain{Window: w, Started: first.received}, 0)
		if api.IsBodyTooLarge(err) {
			// A later page of the chain: its halves have shorter
			// chains and smaller pages. What was delivered of w comes
			// again (at least once, C7).
			return r.splitTooLarge(ctx, w, err, r.window)
		}
		var re *restartError
		if !errors.As(err, &re) {
			return err
		}
		p.m.restart(p.cfg.Spec.Name, p.cfg.Account)
		// C3: the chain's URL expired (or the server forgot it): ask
		// the window again from its first page. When the walk itself
		// outlived the URLs, the same walk would expire again: split
		// the window so that its chains are shorter.
		if re.age >= p.cfg.API.NextPageTTL/2 {
			if parts, err := p.plan.SplitFull(w); err == nil && len(parts) > 1 {
				p.m.split(p.cfg.Spec.Name, p.cfg.Account)
				p.log.Warn("next-page URL expired during a long walk; splitting the window", "window_start", record.FormatTime(w.Start),
					"window_end", record.FormatTime(w.End), "chain_age", re.age.String())
				for _, part := range parts {
					if err := r.window(ctx, part); err != nil {
						return err
					}
				}
				return nil
			}
		}
		if restarts >= maxRestarts {
			return fmt.Errorf("%s/%s %s: restarted %d times: %w", p.cfg.Spec.Name, p.cfg.Account, w, restarts+1, re.err)
		}
		p.log.Warn("next-page URL expired; restarting the window", "window_start", record.FormatTime(w.Start),
			"window_end", record.FormatTime(w.End), "chain_age", re.age.String())
	}
}

// splitTooLarge answers an answer over api.max_body_bytes for window w
// (a *api.BodyTooLargeError in err): the window is split with the planner's
// SplitFull and each part is asked with ask, so the window is never marked
// done without its records. A window that cannot be split further is a
// permanent error of the stream (poll error kind "body_too_large"): Run
// logs it with the window and asks again after the failure backoff.
func (r *run) splitTooLarge(ctx context.Context, w window.Window, err error, ask func(context.Context, window.Window) error) error {
	p := r.p
	parts, serr := p.plan.SplitFull(w)
	if serr != nil || len(parts) < 2 {
		return fmt.Errorf("%s/%s %s: answer too large and the window cannot be split further; raise api.max_body_bytes: %w",
			p.cfg.Spec.Name, p.cfg.Account, w, err)
	}
	p.m.split(p.cfg.Spec.Name, p.cfg.Account)
	p.warn.Warn(ctx, p.cfg.Spec.Name+"/"+p.cfg.Account, "body_too_large", "answer over api.max_body_bytes; splitting the window",
		"source", p.cfg.Spec.Name, "account", p.cfg.Account, "window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End), "parts", len(parts), "err", err.Error())
	for _, part := range parts {
		if err := ask(ctx, part); err != nil {
			return err
		}
	}
	return nil
}

// splitIfFull returns the parts of w when its first page says the result
// set may be truncated: totalRows at the cap (C3) or an edge answer with
// max_rows rows (C6). A window that cannot be split further is walked as
// it is, and the possible loss is logged and counted, never silent.
func (r *run) splitIfFull(w window.Window, first *fetched) ([]window.Window, bool) {
	p := r.p
	var parts []window.Window
	var err error
	switch {
	case p.cfg.Spec.Edge && len(first.body.Records) >= p.cfg.Edge.MaxRows:
		parts, err = p.plan.SplitFull(w)
	case !p.cfg.Spec.Edge && first.body.HasPaging && first.body.TotalRows >= p.splitAt:
		parts, err = p.plan.Split(w, first.body.TotalRows)
	default:
		return nil, false
	}
	if err == nil && len(parts) == 0 {
		return nil, false // under the planner's cap: nothing to split
	}
	if err == nil && len(parts) > 1 {
		p.m.split(p.cfg.Spec.Name, p.cfg.Account)
		p.log.Info("window too large, split", "window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End),
			"total_rows", first.body.TotalRows, "rows", len(first.body.Records), "parts", len(parts))
		return parts, true
	}
	p.m.pollError(p.cfg.Spec.Name, p.cfg.Account, "truncated")
	p.log.Error("window cannot be split further; its result set may be truncated", "window_start", record.FormatTime(w.Start),
		"window_end", record.FormatTime(w.End), "total_rows", first.body.TotalRows, "rows", len(first.body.Records))
	return nil, false
}

// emitError is an error of Emit; it ends Run.
type emitError struct{ err error }

func (e *emitError) Error() string { return "emit: " + e.err.Error() }
func (e *emitError) Unwrap() error { return e.err }

// restartError reports a next-page 404 during a walk (C3).
type restartError struct {
	age time.Duration // how old the chain was
	err error
}

func (e *restartError) Error() string { return e.err.Error() }
func (e *restartError) Unwrap() error { return e.err }

type fetched struct {
	body     pagescan.Body
	received time.Time
}

// walk delivers the page pg (index idx of w's chain) and every page after
// it. The next page is fetched once this one is handed to the pipeline:
// emit returns as soon as the page is buffered, so fetching page k+1 still
// overlaps with writing page k, while a poller never holds more than one
// page outside the pipeline's bounded buffer (DESIGN items 2 and 5).
func (r *run) walk(ctx context.Context, w window.Window, pg *fetched, chain Chain, idx int) error {
	p := r.p
	for {
		next := pg.body.Next
		capped := idx+1 >= p.cfg.API.MaxPages
		records, received := pg.body.Records, pg.received
		pg = nil // the envelopes keep what they need of the body
		if p.alerts != nil {
			for _, rec := range records {
				p.alerts.observe(rec) // later re-asks emit only what changed
			}
		}
		chain.Pages++
		chain.Rows += int64(len(records))
		last := next == "" || capped
		after := Cursor{Watermark: w.End, Density: p.density()}
		if !last {
			c := chain
			c.NextURL = next
			after = Cursor{Watermark: r.cur.Watermark, InFlight: &c, Density: p.density()}
		}
		if err := r.emitRecords(ctx, w, idx, records, received, after, false); err != nil {
			return err
		}
		records = nil
		r.cur = after
		if last {
			if capped && next != "" {
				p.m.pollError(p.cfg.Spec.Name, p.cfg.Account, "page_cap")
				p.log.Error("page cap reached with a next page left; the rest of the window is not fetched",
					"window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End), "max_pages", p.cfg.API.MaxPages)
			}
			return nil
		}
		f, err := r.fetch(ctx, w, next, idx+1)
		if err != nil {
			if api.IsNextPageExpired(err) {
				return &restartError{age: p.clk.Now().Sub(chain.Started), err: err}
			}
			return err
		}
		pg = f
		idx++
	}
}

// resume continues the chain in flight of the cursor: from its NextURL
// while that is younger than next_page_ttl (the records before it were
// delivered), else from the window's first page (C3).
func (r *run) resume(ctx context.Context) error {
	p := r.p
	ch := *r.cur.InFlight
	w := ch.Window
	age := p.clk.Now().Sub(ch.Started)
	if ch.NextURL != "" && age < p.cfg.API.NextPageTTL {
		// Either way, a page over max_body_bytes makes the window start
		// again, and window splits it.
		f, err := r.fetch(ctx, w, ch.NextURL, ch.Pages)
		if err == nil {
			err = r.walk(ctx, w, f, ch, ch.Pages)
			var re *restartError
			if !errors.As(err, &re) && !api.IsBodyTooLarge(err) {
				return err
			}
		} else if !api.IsNextPageExpired(err) && !api.IsBodyTooLarge(err) {
			return err
		}
	}
	if ch.NextURL != "" {
		p.m.restart(p.cfg.Spec.Name, p.cfg.Account)
		p.log.Info("chain in flight cannot continue; restarting its window", "window_start", record.FormatTime(w.Start),
			"window_end", record.FormatTime(w.End), "chain_age", age.String())
	}
	return r.window(ctx, w)
}

// fetch fetches page idx of w: the first page when next is empty, else the
// next-page URL next.
func (r *run) fetch(ctx context.Context, w window.Window, next string, idx int) (*fetched, error) {
	p := r.p
	spec := p.cfg.Spec
	req := api.Request{
		Method: "GET", URL: next, Account: p.cfg.AccountHeader, OrgAccess: p.cfg.OrgAccess,
		Functionality: spec.Functionality, Priority: r.priority(w), NextPage: next != "",
		What: fmt.Sprintf("fetch page %d of %s/%s %s", idx+1, spec.Name, p.cfg.Account, w),
	}
	// Room for the page is reserved once the budget admitted the request,
	// right before it is sent (DESIGN item 5): a stream waiting for budget
	// holds no room.
	req.Admitted = func(ctx context.Context) error { return r.out.Reserve(ctx, p.reservation()) }
	if next == "" {
		u, body, err := spec.FirstPage(w, p.cfg.Settings, p.cfg.Edge)
		if err != nil {
			return nil, &api.PermanentError{Err: err}
		}
		req.Method, req.URL, req.Body = spec.Method, u, body
	}
	var pb pagescan.Body
	req.Decode = func(status int, b []byte) error {
		var err error
		pb, err = pagescan.Classify(status, b, spec.DataKey)
		return err
	}
	resp, err := p.c.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	p.m.fetched(spec.Name, p.cfg.Account, len(pb.Records))
	p.sawPage(ctx, len(pb.Records))
	return &fetched{body: pb, received: resp.Received}, nil
}

// sawPage learns the server's page size: the largest page seen becomes the
// reservation of the next fetches (see reservation), and a page larger
// than configured is reported, rate-limited.
func (p *Poller) sawPage(ctx context.Context, rows int) {
	p.mu.Lock()
	grew := rows > p.snap.PageRowsSeen
	if grew {
		p.snap.PageRowsSeen = rows
	}
	p.mu.Unlock()
	if !grew {
		return
	}
	p.m.pageRows(p.cfg.Spec.Name, p.cfg.Account, rows)
	if rows > p.maxPageRows() {
		key := "api.page_rows"
		if p.cfg.Spec.Edge {
			key = "edge.max_rows"
		}
		p.warn.Warn(ctx, p.cfg.Spec.Name+"/"+p.cfg.Account, "page_rows", "the API sent a page larger than configured; reserving for the larger size",
			"source", p.cfg.Spec.Name, "account", p.cfg.Account, "rows", rows, key, p.maxPageRows(), "max_batch_records", p.cfg.MaxBatchRecords)
	}
}

// emitRecords hands the records of page idx of w to the pipeline, with
// after as the cursor once they are all delivered and revisit as the
// page's Revisit. Records up to MaxBatchRecords (or all, when 0) go in one
// Page. More are built and emitted in chunks of at most MaxBatchRecords,
// one chunk at a time, so that no more than one chunk of envelopes exists
// outside the pipeline. Every chunk but the last is a Revisit page with the
// cursor as it stands (r.cur): it moves nothing, and a crash before the
// last chunk asks the whole page again (at least once, C7). Only the last
// chunk carries after.
func (r *run) emitRecords(ctx context.Context, w window.Window, idx int, records []json.RawMessage, received time.Time, after Cursor, revisit bool) error {
	p := r.p
	size := len(records)
	if m := p.cfg.MaxBatchRecords; m > 0 && size > m {
		size = m
	}
	for start := 0; ; start += size {
		end := min(start+size, len(records))
		last := end == len(records)
		envs, err := p.eb.build(records[start:end], w, received)
		if err != nil {
			return &api.PermanentError{Err: fmt.Errorf("%s/%s page %d of %s: %w", p.cfg.Spec.Name, p.cfg.Account, idx+1, w, err)}
		}
		page := Page{
			Stream: p.Stream(), Window: w, Index: idx,
			Envelopes: envs, After: after, Revisit: revisit, FetchedAt: received,
		}
		if !last {
			page.After, page.Revisit = r.cur, true
		}
		n := len(envs)
		envs = nil
		if err := r.out.Emit(ctx, page); err != nil {
			return &emitError{err}
		}
		if !revisit {
			p.delivered(page.After, n, last)
		}
		if last {
			return nil
		}
	}
}

// priority ranks a request for w: fresh when w ends within one interval of
// now - lag (DESIGN item 3).
func (r *run) priority(w window.Window) budget.Priority {
	p := r.p
	edge := p.clk.Now().Add(-p.cfg.Settings.Lag - p.cfg.Settings.Interval)
	return budget.Priority{Account: p.cfg.Account, WindowEnd: w.End, Fresh: !w.End.Before(edge)}
}
