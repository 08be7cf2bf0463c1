package source

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/clock"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

// run is the state of one Run call.
type run struct {
	p                 *Poller
	cur               cursor.Cursor
	out               Output
	started           time.Time
	warnedUnreachable bool
	// start is where the stream began (cursor.Cursor.Start): every page
	// carries it, so that the checkpoint keeps it; zero when unknown.
	start time.Time
	// inv is the stream's last inventory snapshot (inventory.go): every
	// page carries it, so that the checkpoint keeps it.
	inv cursor.Inventory
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
		p.m.PollError(p.cfg.Spec.Name, p.cfg.Account, "unreachable")
		p.log.Error("time older than max_history is no longer served and is skipped",
			"window_start", record.FormatTime(u.Start), "window_end", record.FormatTime(u.End))
	}
	w, ok := p.planner().Next(r.cur.Watermark, planNow, p.st.Density())
	if ok {
		return r.window(ctx, r.recoverLatePhase(w, planNow))
	}
	p.st.SetCaughtUp(true)
	began := p.clk.Now()
	if err := p.rv.Recheck(ctx, r); err != nil {
		return err
	}
	// Rechecks run in the time the stream waits anyway: the next window
	// is asked an interval after the stream caught up, not later.
	spent := p.clk.Now().Sub(began)
	if err := p.rv.RevisitAlerts(ctx, r, r.cur.Watermark); err != nil {
		return err
	}
	if err := r.inventory(ctx); err != nil {
		return err
	}
	if p.cfg.Once {
		return errCaughtUp
	}
	wait := max(p.cadence()-spent, 0)
	if d := r.inventoryWait(p.clk.Now()); d > 0 {
		wait = min(wait, d)
	}
	// The room reserved for the last request goes back while the stream
	// waits (Output.Reserve): a re-ask that found nothing to emit kept
	// it, and streams asleep on the buffer's room starve the others (with
	// many tenants, nearly all of them).
	if err := r.out.Reserve(ctx, 0); err != nil {
		return err
	}
	return clock.Sleep(ctx, p.clk, wait)
}

// fetch fetches page idx of w: the first page when next is empty, else the
// next-page URL next.
func (r *run) fetch(ctx context.Context, w window.Window, next string, idx int) (*fetched, error) {
	return r.fetchAs(ctx, w, next, idx, false, false)
}

// fetchAs is fetch, ranked as a recheck when recheck is set; count asks
// the first page only for its count, with as few fields as the API allows
// (catalog.Spec.CountPage): its records are never delivered.
func (r *run) fetchAs(ctx context.Context, w window.Window, next string, idx int, recheck, count bool) (*fetched, error) {
	p := r.p
	spec := p.cfg.Spec
	req := api.Request{
		Method: "GET", URL: next, Account: p.cfg.AccountHeader, OrgAccess: p.cfg.OrgAccess,
		Functionality: spec.Functionality, Priority: r.priority(w, recheck), NextPage: next != "",
		What: fmt.Sprintf("fetch page %d of %s/%s %s", idx+1, spec.Name, p.cfg.Account, w),
	}
	// Room for the page is reserved once the budget admitted the request,
	// right before it is sent (DESIGN item 5): a stream waiting for budget
	// holds no room.
	req.Admitted = func(ctx context.Context) error { return r.out.Reserve(ctx, p.reservation()) }
	if next == "" {
		first := spec.FirstPage
		if count {
			first = spec.CountPage
		}
		u, body, err := first(w, p.cfg.Settings, p.cfg.Edge)
		if err != nil {
			return nil, &api.PermanentError{Err: err}
		}
		if limit := p.cfg.API.MaxRequestBytes; limit > 0 && int64(len(body)) > limit {
			// C5: the API would refuse it with 400 on every window.
			return nil, &api.PermanentError{Err: fmt.Errorf("%s: search body of %d bytes is over api.max_request_bytes (%d)", req.What, len(body), limit)}
		}
		req.Method, req.URL, req.Body = spec.Method, u, body
	}
	var pb pagescan.Body
	req.Decode = classifyInto(&pb, spec.DataKey)
	resp, err := p.c.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	p.m.Fetched(spec.Name, p.cfg.Account, len(pb.Records))
	p.sawPage(ctx, len(pb.Records))
	return &fetched{body: pb, received: resp.Received}, nil
}

// sawPage learns the server's page size: the largest page seen becomes the
// reservation of the next fetches (see reservation), and a page larger
// than configured is reported, rate-limited.
func (p *Poller) sawPage(ctx context.Context, rows int) {
	if !p.st.SawPageRows(rows) {
		return
	}
	p.m.PageRows(p.cfg.Spec.Name, p.cfg.Account, rows)
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
// cursor.Page. More are built and emitted in chunks of at most MaxBatchRecords,
// one chunk at a time, so that no more than one chunk of envelopes exists
// outside the pipeline. Every chunk but the last is a Revisit page with the
// cursor as it stands (r.cur): it moves nothing, and a crash before the
// last chunk asks the whole page again, and the delivered set leaves out
// the chunks the sinks already hold (once, C7). Only the last chunk
// carries after.
func (r *run) emitRecords(ctx context.Context, w window.Window, idx int, records []json.RawMessage, received time.Time, after cursor.Cursor, revisit bool, ex *emitExtra) error {
	p := r.p
	size := len(records)
	if m := p.cfg.MaxBatchRecords; m > 0 && size > m {
		size = m
	}
	asked := cursor.AskedForward
	switch {
	case revisit && ex != nil && ex.late:
		asked = cursor.AskedLate
	case revisit:
		asked = cursor.AskedAgain
	}
	for start := 0; ; start += size {
		end := min(start+size, len(records))
		last := end == len(records)
		envs, err := p.eb.Build(records[start:end], w, received)
		if err != nil {
			return &api.PermanentError{Err: fmt.Errorf("%s/%s page %d of %s: %w", p.cfg.Spec.Name, p.cfg.Account, idx+1, w, err)}
		}
		if ex != nil {
			// Every record of the window, delivered now or before: an edge
			// window's digest is of what it holds.
			ex.add(envs)
			ex.tally.add(envs)
		}
		if !revisit && !p.cfg.Spec.Edge && w.Start.Before(r.cur.Watermark) {
			// A window that starts below the watermark (a fresh poll that
			// re-covers the late phase, rechecks_recover.go): what it
			// holds there was delivered before or is late. It goes first,
			// as a Revisit page asked as late, so that the once filter
			// teaches the stream the delays of what it keeps.
			var below []record.Envelope
			below, envs = splitBelow(envs, r.cur.Watermark)
			if len(below) > 0 {
				lp := cursor.Page{
					Batch: record.Batch{Source: p.cfg.Spec.Name, Account: p.cfg.Account,
						WindowStart: w.Start, WindowEnd: w.End, Page: idx, Envelopes: below},
					After: r.cur, Revisit: true, Asked: cursor.AskedLate, FetchedAt: received,
				}
				lp.After.Delays = p.rv.Delays()
				lp.After.Start, lp.After.Inventory = r.start, r.inv
				below = nil
				if err := r.out.Emit(ctx, lp); err != nil {
					return &emitError{err}
				}
			}
		}
		// Every record fetched goes on: the pipeline's once filter leaves
		// out what the stream delivered before (C7) and tells the
		// stream's learner what the page added (Learner).
		page := cursor.Page{
			Batch: record.Batch{Tenant: p.cfg.Tenant, Source: p.cfg.Spec.Name, Account: p.cfg.Account,
				WindowStart: w.Start, WindowEnd: w.End, Page: idx, Envelopes: envs},
			After: after, Revisit: revisit, Asked: asked, FetchedAt: received,
		}
		page.After.Delays = p.rv.Delays()
		if ex != nil && last && ex.log != nil {
			page.Log = ex.log()
		}
		if !last {
			page.After, page.Revisit = r.cur, true
			page.After.Delays = p.rv.Delays()
		}
		page.After.Start, page.After.Inventory = r.start, r.inv
		envs = nil
		if err := r.out.Emit(ctx, page); err != nil {
			return &emitError{err}
		}
		if !revisit {
			p.st.Emitted(page.After, last)
		}
		if last {
			return nil
		}
	}
}

// priority ranks a request for w: fresh when w ends within one interval of
// now - lag (DESIGN item 3); a recheck's after fresh ones, before backfill.
func (r *run) priority(w window.Window, recheck bool) budget.Priority {
	p := r.p
	edge := p.clk.Now().Add(-p.cfg.Settings.Lag - p.cadence())
	return budget.Priority{Account: p.cfg.Account, WindowEnd: w.End, Fresh: !recheck && !w.End.Before(edge), Recheck: recheck}
}

// emitExtra is what emitRecords does besides emitting: fold the ids of
// the envelopes into a digest (an edge window's log entry) and give the
// last page the log changes that hold once it is delivered.
type emitExtra struct {
	dig   *record.Digest
	log   func() *cursor.LogChanges
	late  bool          // the records are late ones a recheck recovered
	tally *recoverTally // the record times of a window that starts below the watermark
}

// splitBelow returns the envelopes of envs whose record time is before
// wm, and the others (a new slice each; envs is not changed).
func splitBelow(envs []record.Envelope, wm time.Time) (below, rest []record.Envelope) {
	for _, e := range envs {
		if e.Time.Before(wm) {
			below = append(below, e)
		} else {
			rest = append(rest, e)
		}
	}
	return below, rest
}

func (ex *emitExtra) add(envs []record.Envelope) {
	if ex.dig == nil {
		return
	}
	for _, e := range envs {
		if ex.dig.Add(e.ID) != nil {
			// Not a C7 id: counted all the same, so that the count
			// matches what was delivered.
			ex.dig.Count++
		}
	}
}

// classifyInto is an api.Request's Decode that reads an answer's records
// under dataKey into pb (pagescan.Classify).
func classifyInto(pb *pagescan.Body, dataKey string) func(status int, b []byte) error {
	return func(status int, b []byte) error {
		var err error
		*pb, err = pagescan.Classify(status, b, dataKey)
		return err
	}
}
