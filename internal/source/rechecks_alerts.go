package source

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/alerttrack"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

// RevisitAlerts re-asks the trailing alert_update_lookback before the
// watermark and emits, as Revisit pages that do not move the cursor, the
// alerts whose update_time grew past their mark (C6). The marks live in
// the checkpoint (Page.Log), so a restart emits only the alerts that
// changed. Every edge.alert_follow_interval it also follows the alerts
// created in the edge.alert_follow before the lookback (followAlerts). It
// does nothing for a stream that tracks no alerts.
func (r *rechecks) RevisitAlerts(ctx context.Context, a *run, watermark time.Time) error {
	if r.alerts == nil {
		return nil
	}
	end := watermark
	start := r.alertFloor(end.Add(-r.cfg.Edge.AlertUpdateLookback))
	r.alerts.Prune(r.alertFloor(end.Add(-r.alertKeep())))
	if err := r.revisitRange(ctx, a, start, end); err != nil {
		return err
	}
	return r.followAlerts(ctx, a, watermark, start)
}

// alertKeep is how long after its creation an alert's mark is kept: the
// lookback, or the follow period when longer.
func (r *rechecks) alertKeep() time.Duration {
	return max(r.cfg.Edge.AlertUpdateLookback, r.cfg.Edge.AlertFollow)
}

// alertFloor is t, or the oldest time re-asked when later: the API's
// history floor, or a new stream's start.
func (r *rechecks) alertFloor(t time.Time) time.Time {
	if floor := r.cfg.Plan.Floor(r.cfg.Clock.Now()); t.Before(floor) {
		t = floor
	}
	if t.Before(r.alerts.From) {
		t = r.alerts.From
	}
	return t
}

// AlertPrune is the prune of the alert marks that a page of the alerts
// stream carries: the creation time before which marks are forgotten;
// zero for a stream that tracks no alerts.
func (r *rechecks) AlertPrune() time.Time {
	if r.alerts == nil {
		return time.Time{}
	}
	return r.cfg.Clock.Now().Add(-r.alertKeep()).Truncate(time.Hour)
}

// revisitRange re-asks [start, end) in windows of at most max_window.
func (r *rechecks) revisitRange(ctx context.Context, a *run, start, end time.Time) error {
	maxSpan := min(r.cfg.Settings.MaxWindow, catalog.MaxWindowLimit)
	for s := start; s.Before(end); {
		e := s.Add(maxSpan)
		if e.After(end) {
			e = end
		}
		if err := r.revisitWindow(ctx, a, window.Window{Start: s, End: e}); err != nil {
			return err
		}
		s = e
	}
	return nil
}

// followAlerts re-asks, every alert_follow_interval, the alerts created
// in [watermark - alert_follow, lookbackStart) in the windows
// recheck.FollowWindows cuts from their marks: at most half of max_rows
// marks a window, so that an answer is not cut (C6), which bounds the
// requests by the alerts followed (see package recheck, follow.go).
func (r *rechecks) followAlerts(ctx context.Context, a *run, watermark, lookbackStart time.Time) error {
	e := r.cfg.Edge
	if e.AlertFollow <= e.AlertUpdateLookback || e.AlertFollowInterval <= 0 {
		return nil
	}
	now := r.cfg.Clock.Now()
	if !r.followed.IsZero() && now.Sub(r.followed) < e.AlertFollowInterval {
		return nil
	}
	from := r.alertFloor(watermark.Add(-e.AlertFollow))
	if !lookbackStart.After(from) {
		r.followed = now
		return nil
	}
	maxSpan := min(r.cfg.Settings.MaxWindow, catalog.MaxWindowLimit)
	ws := recheck.FollowWindows(r.alerts.Creates(from, lookbackStart), from, lookbackStart, max(e.MaxRows/2, 1), maxSpan)
	r.knownOnly = true
	defer func() { r.knownOnly = false }()
	for _, w := range ws {
		if err := r.revisitWindow(ctx, a, window.Window{Start: w[0], End: w[1]}); err != nil {
			return err
		}
	}
	r.followed = now
	return nil
}

func (r *rechecks) revisitWindow(ctx context.Context, a *run, w window.Window) error {
	body, received, err := a.askPage(ctx, w, "", 0, false, false)
	if api.IsBodyTooLarge(err) {
		return a.splitTooLarge(ctx, w, err, func(ctx context.Context, w window.Window) error { return r.revisitWindow(ctx, a, w) })
	}
	if err != nil {
		return err
	}
	if len(body.Records) >= r.cfg.Edge.MaxRows {
		if parts, err := r.cfg.Plan.SplitFull(w); err == nil && len(parts) > 1 {
			for _, part := range parts {
				if err := r.revisitWindow(ctx, a, part); err != nil {
					return err
				}
			}
			return nil
		}
		r.m.PollError(r.cfg.Stream.Source, r.cfg.Stream.Account, "truncated")
		r.log.Error("alert re-ask window full and cannot be split; updates may be missed",
			"window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End))
	}
	recs := body.Records
	if r.knownOnly {
		// Following: only alerts emitted before; one never seen was
		// created before the stream's start.
		recs = nil
		for _, rec := range body.Records {
			if r.alerts.Known(alerttrack.UUID(rec)) {
				recs = append(recs, rec)
			}
		}
	}
	changed, marks := r.changedAlerts(recs)
	if len(changed) == 0 {
		return nil
	}
	r.log.Info("alert updates re-emitted", "window_start", record.FormatTime(w.Start), "alerts", len(changed))
	lc := &cursor.LogChanges{Alerts: cursor.AlertChanges{Put: marks, PruneCreatedBefore: r.AlertPrune()}}
	return a.emitRevisit(ctx, w, 0, changed, received, lc, false)
}

// Observe remembers the alerts of records, fetched fresh, and returns the
// marks of those new or updated, for the page that delivers them to store
// (later re-asks emit only what changed); nil for a stream that tracks no
// alerts.
func (r *rechecks) Observe(records []json.RawMessage) map[string]cursor.AlertMark {
	if r.alerts == nil {
		return nil
	}
	var marks map[string]cursor.AlertMark
	for _, rec := range records {
		if id, m, changed := r.alerts.ObserveMark(rec); changed && id != "" {
			if marks == nil {
				marks = map[string]cursor.AlertMark{}
			}
			marks[id] = cursor.AlertMark(m)
		}
	}
	return marks
}

// changedAlerts returns the alerts of records that are new or updated
// since last emitted, and their marks.
func (r *rechecks) changedAlerts(records []json.RawMessage) ([]json.RawMessage, map[string]cursor.AlertMark) {
	var out []json.RawMessage
	var marks map[string]cursor.AlertMark
	for _, rec := range records {
		id, m, changed := r.alerts.ObserveMark(rec)
		if !changed {
			continue
		}
		out = append(out, rec)
		if id != "" {
			if marks == nil {
				marks = map[string]cursor.AlertMark{}
			}
			marks[id] = cursor.AlertMark(m)
		}
	}
	return out, marks
}
