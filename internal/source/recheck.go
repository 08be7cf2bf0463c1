package source

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/alerttrack"
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
// caught up, within half an interval taken from the wait for the next window, ask with backfill
// priority (below every fresh window of the budget) under a deadline of
// that half interval, and stay under their share of the functionality's
// budget (recheck.Limiter).

// wlog is a poller's copy of its window log: the entries as emitted
// (committed or on their way), by start. Only Run's goroutine uses it.
type wlog map[time.Time]recheck.Window

func (l wlog) list() []recheck.Window {
	out := make([]recheck.Window, 0, len(l))
	for _, w := range l {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b recheck.Window) int { return a.Start.Compare(b.Start) })
	return out
}

// rechecking reports whether the poller logs windows and rechecks them.
func (p *Poller) rechecking() bool {
	return p.cfg.Recheck.Enabled() && p.cfg.RecheckLimiter != nil
}

// newDigest returns the digest an edge window's walk fills, nil when the
// window is not logged with one.
func (p *Poller) newDigest() *record.Digest {
	if !p.rechecking() || !p.cfg.Spec.Edge {
		return nil
	}
	return &record.Digest{}
}

// loadLog takes the window log and alert marks of the cursor Run starts
// from.
func (p *Poller) loadLog(c Cursor) {
	if p.wlog == nil {
		p.wlog = wlog{}
		for _, w := range c.Log {
			p.wlog[w.Start] = w
		}
	}
	if p.alerts != nil && !p.marksLoaded {
		p.marksLoaded = true
		for id, m := range c.Alerts {
			p.alerts.Seed(id, alertMark(m))
		}
	}
}

// logWindow adds the log entry of window w, walked whole as chain, to lc:
// its count when fetched is the first page's totalRows, at most the rows
// the chain delivered (an entry's count must never exceed what was
// delivered, or a record could hide behind it), or the rows of a chain
// resumed without its first page; an edge window's count and digest are
// those of the envelopes delivered.
func (r *run) logWindow(lc *LogChanges, w window.Window, o walkOpts, chain Chain) {
	p := r.p
	if !p.rechecking() {
		return
	}
	count := chain.Rows
	if o.total > 0 {
		count = min(o.total, chain.Rows)
	}
	digest := ""
	if o.dig != nil {
		count, digest = o.dig.Count, o.dig.Hex()
	}
	fetched := chain.Started
	if fetched.IsZero() {
		fetched = p.clk.Now()
	}
	cfg := p.cfg.Recheck
	e := cfg.Entry(w.Start, w.End, count, digest, fetched)
	lc.PruneBefore = cfg.PruneBefore(p.clk.Now())
	if cfg.Done(e) {
		return
	}
	p.wlog[e.Start] = e
	lc.Put = append(lc.Put, e)
}

// prune drops the entries past the horizon from the poller's copy and
// counts those that still had a recheck to go.
func (p *Poller) prune(now time.Time) {
	cfg := p.cfg.Recheck
	if n := len(cfg.Expired(p.wlog.list(), now)); n > 0 {
		p.cfg.RecheckMetrics.Expired(p.Stream(), n)
		p.log.Warn("windows left the recheck log with rechecks still to go: the recheck share could not afford them",
			"windows", n, "horizon", cfg.HorizonOrDefault().String())
	}
	cut := cfg.PruneBefore(now)
	for s, w := range p.wlog {
		if !w.End.After(cut) {
			delete(p.wlog, s)
		}
	}
}

// setPending publishes the windows with a recheck due.
func (p *Poller) setPending(n int) {
	p.cfg.RecheckMetrics.SetPending(p.Stream(), n)
	p.mu.Lock()
	p.snap.RecheckPending = n
	p.mu.Unlock()
}

// errRecheckBudget stops the rechecks of one step: the share or the time
// given to them is spent.
var errRecheckBudget = errors.New("recheck budget spent")

// recheck asks again the windows due, oldest first, while the share and
// the step's time allow (see the comment at the top of the file).
func (r *run) recheck(ctx context.Context) error {
	p := r.p
	if !p.rechecking() {
		return nil
	}
	now := p.clk.Now()
	p.prune(now)
	cfg := p.cfg.Recheck
	units := cfg.Due(p.wlog.list(), now)
	defer func() { p.setPending(cfg.Pending(p.wlog.list(), p.clk.Now())) }()
	if len(units) == 0 {
		return nil
	}
	// At most half an interval: the next window is due an interval
	// after the stream caught up, and the step sleeps only the rest.
	rctx, cancel := context.WithTimeout(ctx, max(p.cfg.Settings.Interval/2, time.Second))
	defer cancel()
	r.rechecks = true
	defer func() { r.rechecks = false }()
	for _, u := range units {
		if rctx.Err() != nil {
			break
		}
		var err error
		if u.Edge() {
			err = r.recheckEdge(rctx, u)
		} else {
			err = r.recheckCore(rctx, u)
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, errRecheckBudget), ctx.Err() == nil && rctx.Err() != nil:
			return nil
		case errors.As(err, new(*emitError)), ctx.Err() != nil:
			return err
		}
		// A failed recheck leaves its windows as they are: they are
		// due again at the next step.
		p.m.PollError(p.cfg.Spec.Name, p.cfg.Account, errorKind(err))
		p.log.Warn("recheck failed; asked again later", "window_start", record.FormatTime(u.Start()),
			"window_end", record.FormatTime(u.End()), "err", err.Error())
		return nil
	}
	return nil
}

// allow asks the limiter for one recheck request.
func (p *Poller) allow() error {
	if !p.cfg.RecheckLimiter.Allow() {
		return errRecheckBudget
	}
	return nil
}

// recheckCore narrows a core unit by counts and fetches again what grew.
func (r *run) recheckCore(ctx context.Context, u recheck.Unit) error {
	p := r.p
	n := u.Narrow()
	firsts := map[[2]time.Time]*fetched{}
	for q, ok := n.Next(); ok; q, ok = n.Next() {
		if err := p.allow(); err != nil {
			return err
		}
		w := window.Window{Start: q.Start, End: q.End}
		f, err := r.fetch(ctx, w, "", 0)
		if err != nil {
			return err
		}
		count := int64(len(f.body.Records))
		if f.body.HasPaging {
			count = max(count, f.body.TotalRows)
		}
		if n.Observe(count) {
			firsts[[2]time.Time{q.Start, q.End}] = f
		}
	}
	res := n.Result()
	for _, f := range res.Refetch {
		first := firsts[[2]time.Time{f.Start(), f.End()}]
		if err := r.refetch(ctx, f, first); err != nil {
			return err
		}
	}
	return r.settle(ctx, u, res)
}

// refetch fetches the range of f again whole, from first when its count
// request brought the first page, and emits its pages as Revisit pages;
// the last carries f's log update. Pages of a range found grown are
// fetched whatever the limiter says (what was counted is recovered); they
// still count against the share.
func (r *run) refetch(ctx context.Context, f recheck.Refetch, first *fetched) error {
	p := r.p
	w := window.Window{Start: f.Start(), End: f.End()}
	pg := first
	if pg == nil {
		p.cfg.RecheckLimiter.Allow()
		var err error
		if pg, err = r.fetch(ctx, w, "", 0); err != nil {
			return err
		}
	}
	for idx := 0; ; idx++ {
		next := pg.body.Next
		last := next == "" || idx+1 >= p.cfg.API.MaxPages
		records, marks := pg.body.Records, map[string]AlertMark(nil)
		if p.alerts != nil {
			records, marks = p.changedAlerts(records)
		}
		lc := &LogChanges{Alerts: marks}
		switch {
		case last && next != "":
			// Cut at max_pages: the entry keeps its old count, so the
			// range is found grown again at the next point.
			p.log.Warn("recheck refetch cut at api.max_pages; asked again at the next point", "window_start", record.FormatTime(w.Start),
				"window_end", record.FormatTime(w.End))
		case last:
			lc.Delete = f.Replaces
			if !p.cfg.Recheck.Done(f.Entry) {
				lc.Put = []recheck.Window{f.Entry}
			}
		}
		ex := &emitExtra{log: func() *LogChanges { return lc }}
		if err := r.emitRecords(ctx, w, idx, records, pg.received, r.cur, true, ex); err != nil {
			return err
		}
		if last {
			return nil
		}
		p.cfg.RecheckLimiter.Allow()
		var err error
		if pg, err = r.fetch(ctx, w, next, idx+1); err != nil {
			return err
		}
	}
}

// recheckEdge asks an edge unit whole (C6: no totalRows) and compares
// each window's count and id digest; windows that differ are delivered
// from the answer (for alerts: only the alerts that changed).
func (r *run) recheckEdge(ctx context.Context, u recheck.Unit) error {
	p := r.p
	if err := p.allow(); err != nil {
		return err
	}
	w := window.Window{Start: u.Start(), End: u.End()}
	f, err := r.fetch(ctx, w, "", 0)
	if err != nil {
		return err
	}
	if len(f.body.Records) >= p.cfg.Edge.MaxRows {
		p.log.Warn("edge recheck answer full; its windows are compared as far as it goes", "window_start", record.FormatTime(w.Start),
			"window_end", record.FormatTime(w.End), "rows", len(f.body.Records))
	}
	envs, err := p.eb.build(f.body.Records, w, f.received)
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
	res := u.CompareEdge(got)
	for _, rf := range res.Refetch {
		x := u.Index(rf.Start())
		recs := make([]json.RawMessage, 0, len(byWin[x]))
		for _, i := range byWin[x] {
			recs = append(recs, f.body.Records[i])
		}
		lc := &LogChanges{Delete: rf.Replaces}
		if !p.cfg.Recheck.Done(rf.Entry) {
			lc.Put = []recheck.Window{rf.Entry}
		}
		if p.alerts != nil {
			recs, lc.Alerts = p.changedAlerts(recs)
		}
		ex := &emitExtra{log: func() *LogChanges { return lc }}
		rw := window.Window{Start: rf.Start(), End: rf.End()}
		if err := r.emitRecords(ctx, rw, 0, recs, f.received, r.cur, true, ex); err != nil {
			return err
		}
	}
	return r.settle(ctx, u, res)
}

// settle stores the unit's kept entries (stages advanced, shrinks) on an
// empty Revisit page, updates the poller's copy of the log (refetched
// entries were stored by their last pages), and counts.
func (r *run) settle(ctx context.Context, u recheck.Unit, res recheck.Result) error {
	p := r.p
	lc := &LogChanges{}
	for _, up := range res.Keep {
		lc.Delete = append(lc.Delete, up.Replaces...)
		if !p.cfg.Recheck.Done(up.Entry) {
			lc.Put = append(lc.Put, up.Entry)
		}
	}
	for _, up := range append(slices.Clone(res.Keep), refetchUpdates(res.Refetch)...) {
		for _, s := range up.Replaces {
			delete(p.wlog, s)
		}
		if !p.cfg.Recheck.Done(up.Entry) {
			p.wlog[up.Entry.Start] = up.Entry
		}
	}
	for _, s := range res.Shrunk {
		p.log.Warn("a rechecked window holds fewer records than when it was fetched (retention or deletion); logged, not fixed",
			"window_start", record.FormatTime(s.Start), "window_end", record.FormatTime(s.End), "before", s.Before, "after", s.After)
	}
	if res.Recovered > 0 {
		p.log.Info("recheck found late records and fetched them again", "window_start", record.FormatTime(u.Start()),
			"window_end", record.FormatTime(u.End()), "rows", res.Recovered, "ranges", res.Grown(), "requests", res.Requests)
	}
	p.cfg.RecheckMetrics.Observe(p.Stream(), res)
	if lc.Empty() {
		return nil
	}
	w := window.Window{Start: u.Start(), End: u.End()}
	return r.emitRecords(ctx, w, 0, nil, p.clk.Now(), r.cur, true, &emitExtra{log: func() *LogChanges { return lc }})
}

func refetchUpdates(fs []recheck.Refetch) []recheck.Update {
	out := make([]recheck.Update, len(fs))
	for i, f := range fs {
		out[i] = f.Update
	}
	return out
}

// observeAlerts remembers the alerts of records and returns the marks of
// those new or updated, for the page that delivers them to store.
func (p *Poller) observeAlerts(records []json.RawMessage) map[string]AlertMark {
	var marks map[string]AlertMark
	for _, rec := range records {
		if id, m, changed := p.alerts.ObserveMark(rec); changed && id != "" {
			if marks == nil {
				marks = map[string]AlertMark{}
			}
			marks[id] = AlertMark(m)
		}
	}
	return marks
}

// changedAlerts returns the alerts of records that are new or updated
// since last emitted, and their marks.
func (p *Poller) changedAlerts(records []json.RawMessage) ([]json.RawMessage, map[string]AlertMark) {
	var out []json.RawMessage
	var marks map[string]AlertMark
	for _, rec := range records {
		id, m, changed := p.alerts.ObserveMark(rec)
		if !changed {
			continue
		}
		out = append(out, rec)
		if id != "" {
			if marks == nil {
				marks = map[string]AlertMark{}
			}
			marks[id] = AlertMark(m)
		}
	}
	return out, marks
}

func alertMark(m AlertMark) alerttrack.Mark { return alerttrack.Mark(m) }
