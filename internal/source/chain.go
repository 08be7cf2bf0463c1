package source

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

// A window is never marked done without its records. One that cannot be
// finished as asked (its chain cut at api.max_pages with pages left, a
// chain that ended at the split threshold while totalRows said less, a
// chain that ended before its totalRows (the server's own cap, learnt as
// window.Limits.ChainCap), a
// next-page URL that expired before the walk ended) is asked again as
// parts from their first pages: records of a window come in no promised
// order (C3), so what a cut chain delivered is no prefix of anything. The
// parts are walked in order, and each moves the watermark to its end
// (DESIGN item 7). The sizes come from what the server showed (window.Limits),
// not only from configuration.

// maxRestarts bounds the restarts of one window that cannot be split after
// its next-page URL expired; past it the poll fails (counted, logged) and
// is retried after a backoff.
const maxRestarts = 5

// Reasons a chain did not finish its window (log key "reason").
const (
	cutPageCap   = "page_cap"  // api.max_pages reached with a next page left
	cutTruncated = "truncated" // the chain ended at the split threshold: maybe cut by the server
	cutShort     = "short"     // the chain ended before its first page's totalRows: cut by the server (C3)
	cutExpired   = "expired"   // a next-page 404 (C3)
)

// cutError reports a chain that did not finish its window. Every page it
// delivered was emitted without moving the watermark.
type cutError struct {
	reason string
	chain  cursor.Chain  // what the chain delivered
	age    time.Duration // the chain's age at a next-page 404
	err    error         // the 404, for cutExpired
}

func (e *cutError) Error() string {
	if e.err != nil {
		return e.reason + ": " + e.err.Error()
	}
	return e.reason
}

func (e *cutError) Unwrap() error { return e.err }

// emitError is an error of Emit; it ends Run.
type emitError struct{ err error }

func (e *emitError) Error() string { return "emit: " + e.err.Error() }
func (e *emitError) Unwrap() error { return e.err }

type fetched struct {
	body     pagescan.Body
	received time.Time
}

// walkOpts tell walk how to judge its chain.
type walkOpts struct {
	// total is the first page's totalRows (0 unknown: a resumed chain).
	total int64
	// asIs is set when the window cannot be split any further: a chain
	// that cannot finish it is logged and counted as a loss, never
	// silent, and the window is done.
	asIs bool
	// dig, for an edge window logged for rechecks, collects the ids
	// delivered (cursor.LoggedWindow.Digest).
	dig *record.Digest
	// tally, for a core window that starts below the watermark, collects
	// the record times of its chain (walk sets it).
	tally *recoverTally
}

// laterOf is the later of a and b.
func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// window fetches window w completely: its first page, a split when the
// result set may be truncated or its walk could not end within the
// next-page life (C3, C6), then its next-page chain; a chain that does not
// finish the window has it asked again in parts.
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
		if first.body.Next != "" {
			// A page with a next page is full: the server's page size
			// decides the split threshold before this window's split.
			p.sawFullPage(len(first.body.Records))
		}
		total := int64(len(first.body.Records))
		if first.body.HasPaging {
			total = max(total, first.body.TotalRows)
		}
		countKnown := !p.countCapped(first)
		if countKnown {
			p.st.SetDensity(window.Density(p.st.Density(), total, w.Duration()))
		}
		parts, asIs := r.splitFirst(w, first, total)
		if len(parts) > 0 {
			return r.parts(ctx, parts)
		}
		ch, err := r.walk(ctx, w, first, cursor.Chain{Window: w, Started: first.received, Total: chainTotal(first)}, 0, walkOpts{total: total, asIs: asIs, dig: p.rv.NewDigest()})
		var cut *cutError
		isCut := errors.As(err, &cut)
		if (err == nil || isCut) && !countKnown && ch.Rows > total {
			// The count said "at least": the chain tells more, and a
			// chain cut short tells only "at least" again.
			p.st.SetDensity(window.Density(p.st.Density(), atLeast(ch.Rows, isCut), w.Duration()))
		}
		if api.IsBodyTooLarge(err) {
			// A later page of the chain: its parts have shorter chains
			// and smaller pages. What was delivered of w is asked
			// again and left out by the delivered set (once, C7).
			return r.splitTooLarge(ctx, w, err, r.window)
		}
		if !isCut {
			return err
		}
		parts, err = r.reask(w, cut, total, restarts)
		if err != nil {
			return err
		}
		if len(parts) > 0 {
			return r.parts(ctx, parts)
		}
		p.log.Warn("next-page URL expired and the window cannot be split; restarting it", "window_start", record.FormatTime(w.Start),
			"window_end", record.FormatTime(w.End), "chain_age", cut.age.String(), "pages", cut.chain.Pages, "rows", cut.chain.Rows)
	}
}

// chainTotal is the count a chain of first is judged by (C3): the first
// page's totalRows when the answer is paged, else 0 (unknown: an answer
// without paging has no chain).
func chainTotal(first *fetched) int64 {
	if !first.body.HasPaging {
		return 0
	}
	return max(first.body.TotalRows, int64(len(first.body.Records)))
}

// parts asks each part in order.
func (r *run) parts(ctx context.Context, parts []window.Window) error {
	for _, part := range parts {
		if err := r.window(ctx, part); err != nil {
			return err
		}
	}
	return nil
}

// countCapped reports whether the first page's totalRows is a count the
// server was seen to cap: it says only "at least".
func (p *Poller) countCapped(first *fetched) bool {
	return first.body.HasPaging && !p.cfg.Spec.Edge && p.paging().CountCapped(first.body.TotalRows)
}

// canSplit reports whether w can be cut into two parts of MinWindow.
func (p *Poller) canSplit(w window.Window) bool {
	_, err := p.planner().SplitInto(w, 2)
	return err == nil
}

// splitFirst returns the parts of w when its first page says the window
// cannot be walked whole: totalRows at the split threshold (C3, which the
// service may also cap: then the learnt density is the better guess), a
// walk longer than the next-page life allows (C3), an answer without
// paging as large as a full page (C3), or an edge answer with max_rows rows
// (C6). asIs reports a window that cannot be split further:
// it is walked as it is, and a possible loss is logged and counted, never
// silent.
func (r *run) splitFirst(w window.Window, first *fetched, total int64) (parts []window.Window, asIs bool) {
	p := r.p
	pl := p.planner()
	var err error
	truncated := false
	switch {
	case p.cfg.Spec.Edge:
		if len(first.body.Records) < p.cfg.Edge.MaxRows {
			return nil, !p.canSplit(w)
		}
		truncated = true
		parts, err = pl.SplitFull(w)
	case first.body.HasPaging:
		pg := p.paging()
		k, trunc, long := pg.FirstSplit(pg.Estimate(total, p.st.Density(), w.Duration()))
		if !trunc && !long {
			return nil, !p.canSplit(w)
		}
		truncated = trunc
		parts, err = pl.SplitInto(w, k)
	case int64(len(first.body.Records)) >= p.paging().PageSize():
		// C3: an answer without paging holds every row of the window in
		// one page; one as large as a full page is more likely cut than
		// complete, so it is asked again in parts, never trusted.
		truncated = true
		parts, err = pl.SplitInto(w, p.paging().CutParts(atLeast(int64(len(first.body.Records)), true)))
	default:
		return nil, !p.canSplit(w)
	}
	if err == nil && len(parts) > 1 {
		p.m.Split(p.cfg.Spec.Name, p.cfg.Account)
		// DEBUG: splitting is how a large window is walked (C3), on a
		// first run's backfill above all; nothing for an operator to do.
		p.log.Debug("window too large to walk whole, split", "window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End),
			"total_rows", first.body.TotalRows, "rows", len(first.body.Records), "split_at", p.splitAt(), "parts", len(parts))
		return parts, false
	}
	if truncated {
		p.m.PollError(p.cfg.Spec.Name, p.cfg.Account, "truncated")
		p.log.Error("window cannot be split further; its result set may be truncated", "window_start", record.FormatTime(w.Start),
			"window_end", record.FormatTime(w.End), "total_rows", first.body.TotalRows, "rows", len(first.body.Records))
	}
	return nil, true
}

// atLeast is the rows a window is taken to hold when a chain brought rows
// of it: rows, or twice that when the chain was cut short and only says
// "at least" (a guess that halves the re-asks of a doubling search).
func atLeast(rows int64, cut bool) int64 {
	if cut {
		return 2 * rows
	}
	return rows
}

// reask answers a chain that did not finish w: the parts to ask instead,
// none to restart w (an expired chain in a window that cannot be split),
// or an error once restarts are exhausted.
func (r *run) reask(w window.Window, cut *cutError, total int64, restarts int) ([]window.Window, error) {
	p := r.p
	rows := max(total, cut.chain.Rows)
	if cut.reason != cutExpired && cut.chain.Rows >= total {
		// The count was capped: the window holds more than the chain
		// brought, how much more nothing says.
		rows = atLeast(cut.chain.Rows, true)
	}
	var k int64
	msg := ""
	switch cut.reason {
	case cutExpired:
		p.m.Restart(p.cfg.Spec.Name, p.cfg.Account)
		p.sawExpiry(cut.age)
		// Parts whose walks fit well within the next-page life seen;
		// at least two, so that the same walk is never repeated (what
		// the expired chain delivered comes again, once).
		k = p.paging().ExpiredParts(rows)
		msg = "next-page URL expired before the walk ended; asking the window again in parts"
	case cutShort:
		// The count is true: parts under the chain cap just learnt.
		k = p.paging().CutParts(rows)
		msg = "the chain ended before its totalRows: the API cut it; asking the window again in parts under the chain cap seen"
	case cutPageCap:
		// More rows than delivered are left.
		k = p.paging().CutParts(rows + 1)
		msg = "page cap reached with pages left; asking the window again in parts"
	default:
		k = p.paging().CutParts(rows)
		msg = "the chain ended at the split threshold, the result set may be cut; asking the window again in parts"
	}
	parts, err := p.planner().SplitInto(w, k)
	if err != nil || len(parts) < 2 {
		if cut.reason == cutExpired && restarts < maxRestarts {
			return nil, nil
		}
		return nil, fmt.Errorf("%s/%s %s: %s and the window cannot be split further: %w", p.cfg.Spec.Name, p.cfg.Account, w, cut.reason,
			errors.Join(cut, err))
	}
	p.m.Split(p.cfg.Spec.Name, p.cfg.Account)
	l := p.st.Limits()
	p.log.Warn(msg, "reason", cut.reason, "window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End),
		"pages", cut.chain.Pages, "rows", cut.chain.Rows, "total_rows", total, "chain_age", cut.age.String(), "parts", len(parts),
		"page_rows_seen", l.PageRows, "next_page_ttl_seen", l.NextPageTTL.String(), "page_time", l.PageTime.String(), "chain_cap_seen", l.ChainCap)
	return parts, nil
}

// splitTooLarge answers an answer over api.max_body_bytes for window w
// (a *api.BodyTooLargeError in err): the window is split with the planner's
// SplitFull and each part is asked with ask, so the window is never marked
// done without its records. A window that cannot be split further is a
// permanent error of the stream (poll error kind "body_too_large"): Run
// logs it with the window and blocks the stream.
func (r *run) splitTooLarge(ctx context.Context, w window.Window, err error, ask func(context.Context, window.Window) error) error {
	p := r.p
	parts, serr := p.plan.SplitFull(w)
	if serr != nil || len(parts) < 2 {
		return fmt.Errorf("%s/%s %s: answer too large and the window cannot be split further; raise api.max_body_bytes: %w",
			p.cfg.Spec.Name, p.cfg.Account, w, err)
	}
	p.m.Split(p.cfg.Spec.Name, p.cfg.Account)
	p.warn.Warn(ctx, p.cfg.Spec.Name+"/"+p.cfg.Account, "body_too_large", "answer over api.max_body_bytes; splitting the window",
		"source", p.cfg.Spec.Name, "account", p.cfg.Account, "window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End), "parts", len(parts), "err", err.Error())
	for _, part := range parts {
		if err := ask(ctx, part); err != nil {
			return err
		}
	}
	return nil
}

// walk delivers the page pg (index idx of w's chain) and every page after
// it, and returns what the chain delivered. The next page is fetched once
// this one is handed to the pipeline: emit returns as soon as the page is
// buffered, so fetching page k+1 still overlaps with writing page k, while
// a poller never holds more than one page outside the pipeline's bounded
// buffer (DESIGN items 2 and 5). A chain that cannot finish w returns a
// *cutError; its last page then carries a cursor that asks w again from
// its first page.
func (r *run) walk(ctx context.Context, w window.Window, pg *fetched, chain cursor.Chain, idx int, o walkOpts) (cursor.Chain, error) {
	p := r.p
	if o.tally == nil && o.dig == nil && w.Start.Before(r.cur.Watermark) {
		// A window that starts below the watermark (rechecks_recover.go):
		// its log entries come from what its chain held.
		o.tally = newRecoverTally(w, r.cur.Watermark, p.rv.wlog.list(), idx > 0)
	}
	for {
		next := pg.body.Next
		paging := pg.body.HasPaging
		records, received := pg.body.Records, pg.received
		pg = nil                       // the envelopes keep what they need of the body
		marks := p.rv.Observe(records) // later re-asks emit only what changed
		if next != "" {
			p.sawFullPage(len(records))
		}
		chain.Pages++
		chain.Rows += int64(len(records))
		cut := ""
		switch {
		case next != "" && idx+1 >= p.cfg.API.MaxPages:
			cut = cutPageCap
		case next == "" && paging && p.sawChainEnd(chain.Total, chain.Rows):
			// C3: totalRows is the true size of the result set and late
			// records only add to a chain: the server stopped this one
			// at a cap of its own, below the configured one.
			cut = cutShort
		case next == "" && paging && !p.cfg.Spec.Edge && chain.Rows >= p.splitAt():
			// C3: with a true count the first page would have split
			// this window; the count was capped, and the chain may have
			// stopped at the server's cap.
			cut = cutTruncated
		}
		lost := ""
		if cut != "" && o.asIs {
			lost, cut = cut, ""
		}
		last := next == "" || cut != "" || lost != ""
		// Never back: a part of a window that starts below the watermark
		// (rechecks_recover.go) may end below it.
		after := cursor.Cursor{Watermark: laterOf(w.End, r.cur.Watermark), Density: p.st.Density(), Limits: p.st.Limits()}
		switch {
		case cut != "":
			// Ask w again from its first page (in parts): what this
			// chain delivered is no prefix of the window (C3).
			c := chain
			c.NextURL = ""
			after = cursor.Cursor{Watermark: r.cur.Watermark, InFlight: &c, Density: after.Density, Limits: after.Limits}
		case !last:
			c := chain
			c.NextURL = next
			after = cursor.Cursor{Watermark: r.cur.Watermark, InFlight: &c, Density: after.Density, Limits: after.Limits}
		}
		ex := &emitExtra{dig: o.dig, tally: o.tally}
		done := cut == "" && lost == "" && next == ""
		if done || len(marks) > 0 {
			ex.log = func() *cursor.LogChanges {
				lc := &cursor.LogChanges{Alerts: cursor.AlertChanges{Put: marks, PruneCreatedBefore: p.rv.AlertPrune()}}
				if done {
					p.rv.LogWindow(lc, w, o.total, chain.Rows, o.dig, chain.Started, o.tally)
				}
				return lc
			}
		}
		if err := r.emitRecords(ctx, w, idx, records, received, after, false, ex); err != nil {
			return chain, err
		}
		records = nil
		r.cur = after
		if next == "" {
			p.sawCappedCount(o.total, chain.Rows)
		}
		if cut != "" {
			return chain, &cutError{reason: cut, chain: chain}
		}
		if last {
			if lost != "" {
				p.m.PollError(p.cfg.Spec.Name, p.cfg.Account, lost)
				p.log.Error("window cannot be split further and its chain did not finish it; the rest of the window is not fetched",
					"reason", lost, "window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End),
					"pages", chain.Pages, "rows", chain.Rows, "max_pages", p.cfg.API.MaxPages)
			}
			return chain, nil
		}
		f, err := r.fetch(ctx, w, next, idx+1)
		if err != nil {
			if api.IsNextPageExpired(err) {
				return chain, &cutError{reason: cutExpired, chain: chain, age: p.clk.Now().Sub(chain.Started), err: err}
			}
			return chain, err
		}
		p.sawNextPage(f.received.Sub(chain.Started), f.received.Sub(received))
		pg = f
		idx++
	}
}

// resume continues the chain in flight of the cursor: from its NextURL
// while that is younger than the next-page life (configured or seen; the
// records before it were delivered), else from the window's first page
// (C3). A window in flight that now starts before the API's history floor
// (after a long stop) is clamped to it: asked unclamped, it would get a
// 400 on every try (C3 max_history).
func (r *run) resume(ctx context.Context) error {
	p := r.p
	ch := *r.cur.InFlight
	now := p.clk.Now()
	w, ok := p.plan.Clamp(ch.Window, now)
	if !ok || w != ch.Window {
		p.m.PollError(p.cfg.Spec.Name, p.cfg.Account, "unreachable")
		p.log.Error("the window in flight starts before the time the API still serves (max_history); the older part is skipped",
			"window_start", record.FormatTime(ch.Window.Start), "window_end", record.FormatTime(ch.Window.End),
			"floor", record.FormatTime(p.plan.Floor(now)))
		if !ok {
			// Nothing of it is left: the watermark moves past it.
			after := cursor.Cursor{Watermark: ch.Window.End, Density: p.st.Density(), Limits: p.st.Limits()}
			if err := r.emitRecords(ctx, ch.Window, 0, nil, now, after, false, nil); err != nil {
				return err
			}
			r.cur = after
			return nil
		}
		return r.window(ctx, w)
	}
	age := now.Sub(ch.Started)
	if ch.NextURL != "" && age < p.paging().TTL() {
		// Either way, a page over max_body_bytes makes the window start
		// again, and window splits it.
		f, err := r.fetch(ctx, w, ch.NextURL, ch.Pages)
		switch {
		case err == nil:
			p.sawNextPage(f.received.Sub(ch.Started), 0)
			// The ids of the pages before the restart are unknown: an
			// edge window resumed is not logged (edge answers have no
			// next pages, C6, so this is a core chain).
			_, err = r.walk(ctx, w, f, ch, ch.Pages, walkOpts{asIs: !p.canSplit(w)})
			var cut *cutError
			if errors.As(err, &cut) && cut.reason == cutExpired {
				p.sawExpiry(cut.age)
			}
			if cut == nil && !api.IsBodyTooLarge(err) {
				return err
			}
		case api.IsNextPageExpired(err):
			p.sawExpiry(p.clk.Now().Sub(ch.Started))
		case !api.IsBodyTooLarge(err):
			return err
		}
	}
	if ch.NextURL != "" {
		p.m.Restart(p.cfg.Spec.Name, p.cfg.Account)
		p.log.Info("chain in flight cannot continue; asking its window again", "window_start", record.FormatTime(w.Start),
			"window_end", record.FormatTime(w.End), "chain_age", age.String())
	}
	return r.window(ctx, w)
}
