package source

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

// maxTrackedAlerts bounds the alert tracker's memory; past it the alerts
// created longest ago are forgotten first (they are re-emitted at most once
// more, which dedup by id absorbs).
const maxTrackedAlerts = 1 << 20

// alertTracker remembers, for edge alerts created within the lookback, the
// largest update_time seen (C6: an alert changes after creation). Only the
// Run goroutine uses it.
type alertTracker struct {
	lookback time.Duration
	seen     map[string]alertSeen
	// from, when set, is the start of a new stream: nothing before it is
	// re-asked.
	from time.Time
}

type alertSeen struct {
	update, create int64 // epoch milliseconds
}

func newAlertTracker(lookback time.Duration) *alertTracker {
	return &alertTracker{lookback: lookback, seen: map[string]alertSeen{}}
}

// alertKey holds the members the tracker reads; the record stays raw.
type alertKey struct {
	UUID       string          `json:"uuid"`
	UpdateTime json.RawMessage `json:"update_time"`
	CreateTime json.RawMessage `json:"create_time"`
}

// observe records raw and reports whether it is new or its update_time
// grew. An alert without uuid cannot be tracked and always counts as new.
func (a *alertTracker) observe(raw json.RawMessage) bool {
	var k alertKey
	if json.Unmarshal(raw, &k) != nil || k.UUID == "" {
		return true
	}
	create := msOf(k.CreateTime)
	update := msOf(k.UpdateTime)
	if update == 0 {
		update = create
	}
	old, ok := a.seen[k.UUID]
	if ok && update <= old.update {
		return false
	}
	a.seen[k.UUID] = alertSeen{update: update, create: create}
	return true
}

func msOf(raw json.RawMessage) int64 {
	if len(raw) == 0 {
		return 0
	}
	t, err := record.ParseTime(raw)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// prune forgets alerts created before from, and the oldest ones past the
// size bound.
func (a *alertTracker) prune(from time.Time) {
	cut := from.UnixMilli()
	for id, s := range a.seen {
		if s.create < cut {
			delete(a.seen, id)
		}
	}
	if len(a.seen) <= maxTrackedAlerts {
		return
	}
	creates := make([]int64, 0, len(a.seen))
	for _, s := range a.seen {
		creates = append(creates, s.create)
	}
	slices.Sort(creates)
	cut = creates[len(creates)-maxTrackedAlerts]
	for id, s := range a.seen {
		if s.create < cut {
			delete(a.seen, id)
		}
	}
}

// revisitAlerts re-asks the trailing alert_update_lookback before the
// watermark and emits, as Revisit pages that do not move the cursor, the
// alerts whose update_time grew since they were last seen (C6).
func (r *run) revisitAlerts(ctx context.Context) error {
	p := r.p
	end := r.cur.Watermark
	start := end.Add(-p.alerts.lookback)
	if floor := p.plan.Floor(p.clk.Now()); start.Before(floor) {
		start = floor
	}
	if start.Before(p.alerts.from) {
		start = p.alerts.from
	}
	p.alerts.prune(start)
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
		p.m.pollError(p.cfg.Spec.Name, p.cfg.Account, "truncated")
		p.log.Error("alert re-ask window full and cannot be split; updates may be missed",
			"window_start", record.FormatTime(w.Start), "window_end", record.FormatTime(w.End))
	}
	var changed []json.RawMessage
	for _, rec := range f.body.Records {
		if p.alerts.observe(rec) {
			changed = append(changed, rec)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	p.log.Info("alert updates re-emitted", "window_start", record.FormatTime(w.Start), "alerts", len(changed))
	return r.emitRecords(ctx, w, 0, changed, f.received, r.cur, true)
}
