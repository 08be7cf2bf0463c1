package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// Rechecks (C3: a record may become visible minutes to hours after its
// time). Every window fetched whole is logged with its count when fetched
// (the first page's totalRows; an edge window's rows and id digest), on
// its last page, so that the pipeline commits the entry with the
// watermark. When the stream is caught up, the windows due at a recheck
// point (package recheck) are asked again: a core unit is counted and
// narrowed down to what grew, which is fetched again; an edge unit is
// asked whole and compared. Pages of rechecks are Revisit pages: they
// carry records and log changes, never move the cursor. Rechecks never
// delay the stream's newest window: they run only when the stream is
// caught up, in the wait for the next window: their counts are asked
// within half an interval, with recheck priority (below every fresh
// window of the budget, above backfill), and stay under their share of
// the functionality's budget (recheck.Limiter); a range found grown is
// then fetched to its end, so that a long refetch never starts over.

// wlog is a poller's copy of its window log: the entries as emitted
// (committed or on their way), by start. Only Run's goroutine uses it.
type wlog map[time.Time]cursor.LoggedWindow

func (l wlog) list() []cursor.LoggedWindow {
	out := make([]cursor.LoggedWindow, 0, len(l))
	for _, w := range l {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b cursor.LoggedWindow) int { return a.Start.Compare(b.Start) })
	return out
}

// pts is the recheck plan of the current step: the configured points, or
// the learnt ones when they are auto (see learn).
func (r *rechecks) pts() recheck.Plan {
	if !r.set {
		r.learn()
	}
	return r.points
}

// learn computes the plan of the step from what the stream learnt and
// the cadence the budget affords, and publishes it.
func (r *rechecks) learn() {
	cadence := r.cfg.Settings.Interval
	if r.cfg.Limiter != nil {
		cadence = r.cfg.Limiter.Cadence(r.cfg.Settings.Interval)
	}
	var pool cursor.Delays
	if r.cfg.Pool != nil {
		pool = r.cfg.Pool.Sum(r.cfg.Clock.Now())
	}
	r.points, r.set = r.cfg.Recheck.Learnt(r.delays, pool, cadence), true
	r.cfg.RecheckMetrics.Learnt(r.cfg.Stream, r.points, r.delays)
	r.view.Store(&learntView{delays: r.delays.Clone(), dense: r.points.Dense, cadence: r.points.Cadence})
}

// observeFresh counts n records a fresh page added; observeLate the
// records a recheck recovered, found at received (recheck: auto learns
// the platform's delays from them). Both hear of what the once filter
// kept of a page (Poller.Learner).
func (r *rechecks) observeFresh(n int, received time.Time) {
	if r.rechecking() {
		recheck.ObserveFresh(&r.delays, n, received)
		r.share()
	}
}

// share tells the source's pool what the stream learnt.
func (r *rechecks) share() {
	if r.cfg.Pool != nil && r.rechecking() {
		r.cfg.Pool.Set(r.cfg.Stream, r.delays)
	}
}

func (r *rechecks) observeLate(envs []record.Envelope, received time.Time) {
	if !r.rechecking() {
		return
	}
	for _, e := range envs {
		late := max(received.Sub(e.Time), 0)
		recheck.ObserveLate(&r.delays, late, received)
	}
	if len(envs) > 0 {
		r.share()
	}
}

// Learner returns the stream's recheck.Observer: the once filter between
// the poller and the sinks (package pipeline) hands it what of each page
// it kept, on the goroutine of Run, during Emit. It learns the platform's
// delays from them (recheck: auto) and counts the kept records of fresh
// pages in Snapshot.Rows.
func (p *Poller) Learner() recheck.Observer { return learner{p} }

// learner is Poller.Learner.
type learner struct{ p *Poller }

func (l learner) ObserveFresh(n int, received time.Time) {
	l.p.st.Kept(n)
	l.p.rv.observeFresh(n, received)
}

func (l learner) ObserveLate(kept []record.Envelope, received time.Time) {
	l.p.rv.observeLate(kept, received)
}

func (l learner) Delays() cursor.Delays { return l.p.rv.Delays() }

// Delays returns a copy of what the stream learnt, for the cursor of the
// pages it emits (the checkpoint keeps it).
func (r *rechecks) Delays() cursor.Delays {
	if !r.rechecking() {
		return cursor.Delays{}
	}
	return r.delays.Clone()
}

// rechecking reports whether the poller logs windows and rechecks them.
func (r *rechecks) rechecking() bool {
	return r.cfg.Recheck.Enabled() && r.cfg.Limiter != nil
}

// NewDigest returns the digest an edge window's walk fills, nil when the
// window is not logged with one.
func (r *rechecks) NewDigest() *record.Digest {
	if !r.rechecking() || !r.cfg.Spec.Edge {
		return nil
	}
	return &record.Digest{}
}

// LogWindow adds the log entry of window w, walked whole, to lc: its
// count when fetched is the first page's totalRows (total; 0 unknown), at
// most the rows the chain delivered (an entry's count must never exceed what was
// delivered, or a record could hide behind it), or the rows of a chain
// resumed without its first page; an edge window's count and digest are
// those of the envelopes delivered (dig). rows is what the chain
// delivered, started when its first page was served (zero: unknown).
//
// A core window that starts below the watermark (a fresh poll that
// re-covered the late phase, recover.go) is logged by tally instead
// (logRecovered).
func (r *rechecks) LogWindow(lc *cursor.LogChanges, w window.Window, total, rows int64, dig *record.Digest, started time.Time, tally *recoverTally) {
	if !r.rechecking() {
		return
	}
	if tally != nil && dig == nil {
		r.logRecovered(lc, w, tally, started)
		return
	}
	count := rows
	if total > 0 {
		count = min(total, rows)
	}
	digest := ""
	if dig != nil {
		count, digest = dig.Count, dig.Hex()
	}
	fetched := started
	if fetched.IsZero() {
		fetched = r.cfg.Clock.Now()
	}
	cfg := r.pts()
	e := cfg.Entry(w.Start, w.End, count, digest, fetched)
	lc.Windows.PruneBefore = r.cfg.Recheck.PruneBefore(r.cfg.Clock.Now())
	if cfg.Done(e) {
		return
	}
	r.wlog[e.Start] = e
	lc.Windows.Put = append(lc.Windows.Put, e)
}

// prune drops the entries past the horizon from the poller's copy and
// counts those that still had a recheck to go.
func (r *rechecks) prune(now time.Time) {
	cfg := r.pts()
	if n := len(cfg.Expired(r.wlog.list(), now)); n > 0 {
		r.cfg.RecheckMetrics.Expired(r.cfg.Stream, n)
		r.log.Warn("windows left the recheck log with rechecks still to go: the recheck share could not afford them",
			"windows", n, "horizon", r.cfg.Recheck.HorizonOrDefault().String())
	}
	cut := r.cfg.Recheck.PruneBefore(now)
	for s, w := range r.wlog {
		if !w.End.After(cut) {
			delete(r.wlog, s)
		}
	}
}

// setPending publishes the windows with a recheck due.
func (r *rechecks) setPending(n int) {
	r.cfg.RecheckMetrics.SetPending(r.cfg.Stream, n)
	r.pending.Store(int64(n))
}

// errRecheckBudget stops the rechecks of one step: the share or the time
// given to them is spent.
var errRecheckBudget = errors.New("recheck budget spent")

// emitFailed marks an error of run.emitRevisit: it ends the run.
type emitFailed struct{ err error }

func (e *emitFailed) Error() string { return e.err.Error() }
func (e *emitFailed) Unwrap() error { return e.err }

// emit is a.Emit, its error marked as one that ends the run.
func emit(ctx context.Context, a *run, w window.Window, idx int, records []json.RawMessage, received time.Time, lc *cursor.LogChanges) error {
	if err := a.emitRevisit(ctx, w, idx, records, received, lc, a.p.rv.alerts == nil); err != nil {
		return &emitFailed{err}
	}
	return nil
}

// Recheck asks again through a the windows due, oldest first, while the
// share and the step's time allow (see the comment at the top of the
// file). It returns an error only when the run must end: ctx ended, or
// Emit failed (its error as is); a failed recheck is counted, logged and
// asked again at the next step.
func (r *rechecks) Recheck(ctx context.Context, a *run) error {
	if !r.rechecking() {
		return nil
	}
	now := r.cfg.Clock.Now()
	r.learn()
	if r.points.Auto() && now.Sub(r.swept) >= r.points.Cadence {
		// The windows of the dense phase are all counted again: one
		// request for the run of them (recheck.Config.Learnt).
		r.points.Sweep, r.swept = true, now
	}
	r.points.Polled = r.polled
	// Learnt points are asked on the sweeps' cadence: a window due at a
	// sparse point waits for the next sweep and merges with its due
	// neighbours into one count; at every step of a stream polling every
	// half minute, each of its small windows would cost a count per point
	// and the share would be spent before the sweeps.
	if r.points.Auto() && !r.points.Sweep {
		return nil
	}
	r.prune(now)
	cfg := r.pts()
	units := cfg.Due(r.wlog.list(), now)
	defer func() { r.setPending(cfg.Pending(r.wlog.list(), r.cfg.Clock.Now())) }()
	if len(units) == 0 {
		return nil
	}
	// At most half an interval: the next window is due an interval
	// after the stream caught up, and the step sleeps only the rest.
	rctx, cancel := context.WithTimeout(ctx, max(r.cfg.Settings.Interval/2, time.Second))
	defer cancel()
	for _, u := range units {
		if rctx.Err() != nil {
			break
		}
		var err error
		if u.Edge() {
			err = r.recheckEdge(ctx, rctx, a, u)
		} else {
			err = r.recheckCore(ctx, rctx, a, u)
		}
		var ef *emitFailed
		switch {
		case err == nil:
			continue
		case errors.Is(err, errRecheckBudget), ctx.Err() == nil && rctx.Err() != nil:
			return nil
		case errors.As(err, &ef):
			return ef.err
		case ctx.Err() != nil:
			return err
		}
		// A failed recheck leaves its windows as they are: they are
		// due again at the next step.
		r.m.PollError(r.cfg.Stream.Source, r.cfg.Stream.Account, errorKind(err))
		r.log.Warn("recheck failed; asked again later", "window_start", record.FormatTime(u.Start()),
			"window_end", record.FormatTime(u.End()), "err", err.Error())
		return nil
	}
	return nil
}

// allow asks the limiter for one recheck request.
func (r *rechecks) allow() error {
	if !r.cfg.Limiter.Allow() {
		return errRecheckBudget
	}
	return nil
}

// fetch asks page idx of w through a as a recheck.
func fetch(ctx context.Context, a *run, w window.Window, next string, idx int) (*fetched, error) {
	return fetchAs(ctx, a, w, next, idx, false)
}

// count asks the first page of q's range through a as a recheck; a range
// asked only for its count (recheck.Config.CountOnly) asks for as few
// fields as the API allows (C3 returns): the server serves no full rows
// to count, and the caller never delivers the page.
func count(ctx context.Context, a *run, q recheck.Query, countOnly bool) (*fetched, error) {
	return fetchAs(ctx, a, window.Window{Start: q.Start, End: q.End}, "", 0, countOnly)
}

func fetchAs(ctx context.Context, a *run, w window.Window, next string, idx int, countOnly bool) (*fetched, error) {
	body, received, err := a.askPage(ctx, w, next, idx, true, countOnly)
	if err != nil {
		return nil, err
	}
	return &fetched{body: body, received: received}, nil
}

// recheckCore narrows a core unit by counts, asked within rctx (the time
// the step gives rechecks), and fetches again what grew within ctx: a
// range found grown is fetched to its end once counted, whatever the
// step's deadline, or a refetch longer than the deadline (a large window
// of a first backfill) would start over at every step and never end.
func (r *rechecks) recheckCore(ctx, rctx context.Context, a *run, u recheck.Unit) error {
	n := u.Narrow()
	firsts := map[[2]time.Time]*fetched{}
	for q, ok := n.Next(); ok; q, ok = n.Next() {
		if err := r.allow(); err != nil {
			return err
		}
		countOnly := r.cfg.Recheck.CountOnly(q)
		f, err := count(rctx, a, q, countOnly)
		if err != nil {
			return err
		}
		if n.Observe(countOf(f)) && !countOnly {
			firsts[[2]time.Time{q.Start, q.End}] = f
		}
	}
	// Its entries are due at the points of the plan in force now.
	res := r.pts().Settle(n.Result())
	unstored := map[time.Time]bool{}
	for _, f := range res.Refetch {
		first := firsts[[2]time.Time{f.Start(), f.End()}]
		if err := r.refetchGrown(ctx, rctx, a, u, f, first, &res, unstored); err != nil {
			return err
		}
	}
	return r.settle(ctx, a, u, res, unstored)
}

// countOf is the count a first page says its range holds (C3: totalRows;
// the rows themselves when the answer has no paging).
func countOf(f *fetched) int64 {
	count := int64(len(f.body.Records))
	if f.body.HasPaging {
		count = max(count, f.body.TotalRows)
	}
	return count
}

// refetchGrown fetches again the range of f, which grew. A single window
// larger than recheck.Config.RefetchRows is first narrowed below its
// bounds with the delivered set's counts of its minutes (a few more count
// requests, recheck.WindowNarrowing), and only its grown parts are
// fetched; its log update then goes with res.Keep once every part was
// fetched to its end. The starts of refetches whose update was not
// stored (a chain cut at api.max_pages, a narrowed window) go to
// unstored. res.Refetched and res.Requests grow by what it asked.
func (r *rechecks) refetchGrown(ctx, rctx context.Context, a *run, u recheck.Unit, f recheck.Refetch, first *fetched,
	res *recheck.Result, unstored map[time.Time]bool) error {
	var wn *recheck.WindowNarrowing
	if f.Grew > 0 && len(f.Replaces) == 1 && f.Entry.Count > r.cfg.Recheck.RefetchRows && r.cfg.Counts != nil {
		// As committed: records still in the pipeline are left out, which
		// only costs a range fetched again, never a record.
		counts, err := r.cfg.Counts.DeliveredCounts(ctx, r.cfg.Stream, f.Start(), f.End())
		if err != nil {
			return fmt.Errorf("read the delivered set: %w", err)
		}
		wn, _ = f.NarrowWindow(counts, r.cfg.Recheck, u.Final, r.cfg.Recheck.MaxRequests-res.Requests)
	}
	if wn == nil {
		res.Refetched += max(f.Entry.Count, 0)
		complete, err := r.refetch(ctx, a, window.Window{Start: f.Start(), End: f.End()}, &f.Update, first)
		if !complete {
			unstored[f.Entry.Start] = true
		}
		return err
	}
	unstored[f.Entry.Start] = true
	firsts := map[[2]time.Time]*fetched{}
	for q, ok := wn.Next(); ok; q, ok = wn.Next() {
		if rctx.Err() != nil || !r.cfg.Limiter.Allow() {
			// Out of time or share: what is left is fetched whole.
			wn.Cap()
			break
		}
		countOnly := r.cfg.Recheck.CountOnly(q)
		pg, err := count(ctx, a, q, countOnly)
		if err != nil {
			return err
		}
		if wn.Observe(countOf(pg)) && !countOnly {
			firsts[[2]time.Time{q.Start, q.End}] = pg
		}
	}
	wr := wn.Result()
	res.Requests += wr.Requests
	res.Capped = res.Capped || wr.Capped
	res.Refetched += wr.Refetched()
	complete := true
	for _, p := range wr.Parts {
		done, err := r.refetch(ctx, a, window.Window{Start: p.Start, End: p.End}, nil, firsts[[2]time.Time{p.Start, p.End}])
		if err != nil {
			return err
		}
		complete = complete && done
	}
	if complete && len(wr.Update.Replaces) > 0 {
		up := wr.Update
		up.Entry = r.pts().Asked(up.Entry)
		res.Keep = append(res.Keep, up)
	}
	r.log.Info("recheck narrowed a grown window below its bounds", "window_start", record.FormatTime(f.Start()),
		"window_end", record.FormatTime(f.End()), "rows", f.Entry.Count, "grew", f.Grew, "parts", len(wr.Parts),
		"rows_fetched_again", wr.Refetched(), "count_requests", wr.Requests)
	return nil
}

// refetch fetches w again whole, from first when its count request
// brought the first page, and emits its pages as Revisit pages; the last
// carries up (nil: none), the log update of the range. Pages of a range
// found grown are fetched whatever the limiter says (what was counted is
// recovered); they still count against the share. It reports whether the
// chain was fetched to its end (false: cut at api.max_pages, up not
// stored).
func (r *rechecks) refetch(ctx context.Context, a *run, w window.Window, up *recheck.Update, first *fetched) (bool, error) {
	pg := first
	if pg == nil {
		r.cfg.Limiter.Allow()
		var err error
		if pg, err = fetch(ctx, a, w, "", 0); err != nil {
			return false, err
		}
	}
	for idx := 0; ; idx++ {
		next := pg.body.Next
		last := next == "" || idx+1 >= r.cfg.API.MaxPages
		records, marks := pg.body.Records, map[string]cursor.AlertMark(nil)
		if r.alerts != nil {
			records, marks = r.changedAlerts(records)
		}
		lc := &cursor.LogChanges{Alerts: cursor.AlertChanges{Put: marks}}
		cut := last && next != ""
		switch {
		case cut:
			// Cut at max_pages: the entry keeps its old count, so the
			// range is found grown again at the next point.
			r.log.Warn("recheck refetch cut at api.max_pages; asked again at the next point", "window_start", record.FormatTime(w.Start),
				"window_end", record.FormatTime(w.End))
		case last && up != nil:
			lc.Windows.Delete = up.Replaces
			if !r.pts().Done(up.Entry) {
				lc.Windows.Put = []cursor.LoggedWindow{up.Entry}
			}
		}
		if err := emit(ctx, a, w, idx, records, pg.received, lc); err != nil {
			return false, err
		}
		if last {
			return !cut, nil
		}
		r.cfg.Limiter.Allow()
		var err error
		if pg, err = fetch(ctx, a, w, next, idx+1); err != nil {
			return false, err
		}
	}
}

// recheckEdge asks an edge unit whole (C6: no totalRows) within rctx and
// compares each window's count and id digest; windows that differ are
// delivered from the answer (for alerts: only the alerts that changed)
// within ctx.
func (r *rechecks) recheckEdge(ctx, rctx context.Context, a *run, u recheck.Unit) error {
	if err := r.allow(); err != nil {
		return err
	}
	w := window.Window{Start: u.Start(), End: u.End()}
	f, err := fetch(rctx, a, w, "", 0)
	if err != nil {
		return err
	}
	if len(f.body.Records) >= r.cfg.Edge.MaxRows {
		r.log.Warn("edge recheck answer full; its windows are compared as far as it goes", "window_start", record.FormatTime(w.Start),
			"window_end", record.FormatTime(w.End), "rows", len(f.body.Records))
	}
	envs, err := a.envelopes(f.body.Records, w, f.received)
	if err != nil {
		return err
	}
	got := make([]record.Digest, len(u.Windows))
	byWin := make([][]int, len(u.Windows))
	for i, e := range envs {
		x := u.Index(e.Time)
		if x < 0 {
			continue
		}
		if got[x].Add(e.ID) != nil {
			got[x].Count++
		}
		byWin[x] = append(byWin[x], i)
	}
	envs = nil
	res := r.pts().Settle(u.CompareEdge(got))
	for _, rf := range res.Refetch {
		x := u.Index(rf.Start())
		recs := make([]json.RawMessage, 0, len(byWin[x]))
		for _, i := range byWin[x] {
			recs = append(recs, f.body.Records[i])
		}
		lc := &cursor.LogChanges{Windows: cursor.WindowChanges{Delete: rf.Replaces}}
		if !r.pts().Done(rf.Entry) {
			lc.Windows.Put = []cursor.LoggedWindow{rf.Entry}
		}
		if r.alerts != nil {
			recs, lc.Alerts.Put = r.changedAlerts(recs)
		}
		rw := window.Window{Start: rf.Start(), End: rf.End()}
		if err := emit(ctx, a, rw, 0, recs, f.received, lc); err != nil {
			return err
		}
	}
	return r.settle(ctx, a, u, res, nil)
}

// settle stores the unit's kept entries (asked again, shrinks) on an
// empty Revisit page, updates the poller's copy of the log (refetched
// entries were stored by their last pages, but those whose start is in
// unstored: their old entries stay, due again), and counts.
func (r *rechecks) settle(ctx context.Context, a *run, u recheck.Unit, res recheck.Result, unstored map[time.Time]bool) error {
	lc := &cursor.LogChanges{}
	for _, up := range res.Keep {
		lc.Windows.Delete = append(lc.Windows.Delete, up.Replaces...)
		if !r.pts().Done(up.Entry) {
			lc.Windows.Put = append(lc.Windows.Put, up.Entry)
		}
	}
	stored := slices.Clone(res.Keep)
	for _, up := range refetchUpdates(res.Refetch) {
		if !unstored[up.Entry.Start] {
			stored = append(stored, up)
		}
	}
	for _, up := range stored {
		for _, s := range up.Replaces {
			delete(r.wlog, s)
		}
		if !r.pts().Done(up.Entry) {
			r.wlog[up.Entry.Start] = up.Entry
		}
	}
	for _, s := range res.Shrunk {
		r.log.Warn("a rechecked window holds fewer records than when it was fetched (retention or deletion); logged, not fixed",
			"window_start", record.FormatTime(s.Start), "window_end", record.FormatTime(s.End), "before", s.Before, "after", s.After)
	}
	if res.Recovered > 0 {
		r.log.Info("recheck found late records and fetched them again", "window_start", record.FormatTime(u.Start()),
			"window_end", record.FormatTime(u.End()), "rows", res.Recovered, "rows_fetched_again", res.Refetched,
			"ranges", res.Grown(), "requests", res.Requests)
	}
	r.cfg.RecheckMetrics.Observe(r.cfg.Stream, res)
	if lc.Empty() {
		return nil
	}
	w := window.Window{Start: u.Start(), End: u.End()}
	return emit(ctx, a, w, 0, nil, r.cfg.Clock.Now(), lc)
}

func refetchUpdates(fs []recheck.Refetch) []recheck.Update {
	out := make([]recheck.Update, len(fs))
	for i, f := range fs {
		out[i] = f.Update
	}
	return out
}
