package source

import (
	"context"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/alerttrack"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

// revisitAlerts re-asks the trailing alert_update_lookback before the
// watermark and emits, as Revisit pages that do not move the cursor, the
// alerts whose update_time grew past their mark (C6). The marks live in
// the checkpoint (Page.Log), so a restart emits only the alerts that
// changed. Every edge.alert_follow_interval it also follows the alerts
// created in the edge.alert_follow before the lookback (followAlerts).
func (r *run) revisitAlerts(ctx context.Context) error {
	p := r.p
	end := r.cur.Watermark
	start := p.alertFloor(end.Add(-p.cfg.Edge.AlertUpdateLookback))
	p.alerts.Prune(p.alertFloor(end.Add(-p.alertKeep())))
	if err := r.revisitRange(ctx, start, end); err != nil {
		return err
	}
	return r.followAlerts(ctx, start)
}

// alertKeep is how long after its creation an alert's mark is kept: the
// lookback, or the follow period when longer.
func (p *Poller) alertKeep() time.Duration {
	return max(p.cfg.Edge.AlertUpdateLookback, p.cfg.Edge.AlertFollow)
}

// alertFloor is t, or the oldest time re-asked when later: the API's
// history floor, or a new stream's start.
func (p *Poller) alertFloor(t time.Time) time.Time {
	if floor := p.plan.Floor(p.clk.Now()); t.Before(floor) {
		t = floor
	}
	if t.Before(p.alerts.From) {
		t = p.alerts.From
	}
	return t
}

// alertPrune is the prune of the alert marks that a page of the alerts
// stream carries: the creation time before which marks are forgotten.
func (p *Poller) alertPrune() time.Time {
	if p.alerts == nil {
		return time.Time{}
	}
	return p.clk.Now().Add(-p.alertKeep()).Truncate(time.Hour)
}

// revisitRange re-asks [start, end) in windows of at most max_window.
func (r *run) revisitRange(ctx context.Context, start, end time.Time) error {
	p := r.p
	maxSpan := min(p.cfg.Settings.MaxWindow, catalog.MaxWindowLimit)
	for s := start; s.Before(end); {
		e := s.Add(maxSpan)
		if e.After(end) {
			e = end
		}
		if err := r.revisitWindow(ctx, window.Window{Start: s, End: e}); err != nil {
			return err
		}
		s = e
	}
	return nil
}

// followAlerts re-asks, every alert_follow_interval, the alerts created
// in [now - alert_follow, lookbackStart) in the windows
// recheck.FollowWindows cuts from their marks: at most half of max_rows
// marks a window, so that an answer is not cut (C6), which bounds the
// requests by the alerts followed (see package recheck, follow.go).
func (r *run) followAlerts(ctx context.Context, lookbackStart time.Time) error {
	p := r.p
	e := p.cfg.Edge
	if e.AlertFollow <= e.AlertUpdateLookback || e.AlertFollowInterval <= 0 {
		return nil
	}
	now := p.clk.Now()
	if !p.followed.IsZero() && now.Sub(p.followed) < e.AlertFollowInterval {
		return nil
	}
	from := p.alertFloor(r.cur.Watermark.Add(-e.AlertFollow))
	if !lookbackStart.After(from) {
		p.followed = now
		return nil
	}
	maxSpan := min(p.cfg.Settings.MaxWindow, catalog.MaxWindowLimit)
	ws := recheck.FollowWindows(p.alerts.Creates(from, lookbackStart), from, lookbackStart, max(e.MaxRows/2, 1), maxSpan)
	r.knownOnly = true
	defer func() { r.knownOnly = false }()
	for _, w := range ws {
		if err := r.revisitWindow(ctx, window.Window{Start: w[0], End: w[1]}); err != nil {
			return err
		}
	}
	p.followed = now
	return nil
}

func (r *run) revisitWindow(ctx context.Context, w window.Window) error {
	p := r.p
	f, err := r.fetch(ctx, w, "", 0)
	if api.IsBodyTooLarge(err) {
		return r.splitTooLarge(ctx, w, err, r.revisitWindow)
	}
	if err != nil {
		return err
	}
	if len(f.body.Records) >= p.cfg.Edge.MaxRows {
		if parts, err := p.plan.SplitFull(w); err == nil && len(parts) > 1 {
			for _, part := range parts {
				if err := r.revisitWindow(ctx, part); err != nil {
					return err
				}
			}
			return nil
		}
		p.m.PollError(p.cfg.Spec.Name, p.cfg.Account, "truncated")
		p.log.Error("alert re-ask window full and cannot be split; updates may be missed",
			"window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End))
	}
	recs := f.body.Records
	if r.knownOnly {
		// Following: only alerts emitted before; one never seen was
		// created before the stream's start.
		recs = nil
		for _, rec := range f.body.Records {
			if p.alerts.Known(alerttrack.UUID(rec)) {
				recs = append(recs, rec)
			}
		}
	}
	changed, marks := p.changedAlerts(recs)
	if len(changed) == 0 {
		return nil
	}
	p.log.Info("alert updates re-emitted", "window_start", record.FormatTime(w.Start), "alerts", len(changed))
	lc := &LogChanges{Alerts: marks, AlertsPruneBefore: p.alertPrune()}
	return r.emitRecords(ctx, w, 0, changed, f.received, r.cur, true, &emitExtra{log: func() *LogChanges { return lc }})
}
