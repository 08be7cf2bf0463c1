package source

import (
	"context"
	"encoding/json"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

// revisitAlerts re-asks the trailing alert_update_lookback before the
// watermark and emits, as Revisit pages that do not move the cursor, the
// alerts whose update_time grew since they were last seen (C6).
func (r *run) revisitAlerts(ctx context.Context) error {
	p := r.p
	end := r.cur.Watermark
	start := end.Add(-p.alerts.Lookback)
	if floor := p.plan.Floor(p.clk.Now()); start.Before(floor) {
		start = floor
	}
	if start.Before(p.alerts.From) {
		start = p.alerts.From
	}
	p.alerts.Prune(start)
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
	var changed []json.RawMessage
	for _, rec := range f.body.Records {
		if p.alerts.Observe(rec) {
			changed = append(changed, rec)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	p.log.Info("alert updates re-emitted", "window_start", record.FormatTime(w.Start), "alerts", len(changed))
	return r.emitRecords(ctx, w, 0, changed, f.received, r.cur, true)
}
