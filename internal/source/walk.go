package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

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
