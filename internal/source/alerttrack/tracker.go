package alerttrack

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// MaxTracked bounds the alert tracker's memory; past it the alerts
// created longest ago are forgotten first (they are re-emitted at most once
// more, which dedup by id absorbs).
const MaxTracked = 1 << 20

// Tracker remembers, for edge alerts created within the lookback, the
// largest update_time seen (C6: an alert changes after creation). Only the
// Run goroutine of its poller uses it: it is not safe for concurrent use.
type Tracker struct {
	// Lookback is the trailing period re-asked (edge.alert_update_lookback).
	Lookback time.Duration
	seen     map[string]alertSeen
	// From, when set, is the start of a new stream: nothing before it is
	// re-asked.
	From time.Time
}

type alertSeen struct {
	update, create int64 // epoch milliseconds
}

// New returns an empty tracker of lookback.
func New(lookback time.Duration) *Tracker {
	return &Tracker{Lookback: lookback, seen: map[string]alertSeen{}}
}

// alertKey holds the members the tracker reads; the record stays raw.
type alertKey struct {
	UUID       string          `json:"uuid"`
	UpdateTime json.RawMessage `json:"update_time"`
	CreateTime json.RawMessage `json:"create_time"`
}

// Observe records raw and reports whether it is new or its update_time
// grew. An alert without uuid cannot be tracked and always counts as new.
func (a *Tracker) Observe(raw json.RawMessage) bool {
	_, _, changed := a.ObserveMark(raw)
	return changed
}

// ObserveMark is Observe that also returns the alert's uuid and its mark
// as it now stands, for the caller to persist when changed; the uuid is
// "" for an alert that cannot be tracked.
func (a *Tracker) ObserveMark(raw json.RawMessage) (uuid string, m cursor.AlertMark, changed bool) {
	var k alertKey
	if json.Unmarshal(raw, &k) != nil || k.UUID == "" {
		return "", cursor.AlertMark{}, true
	}
	create := msOf(k.CreateTime)
	update := msOf(k.UpdateTime)
	if update == 0 {
		update = create
	}
	old, ok := a.seen[k.UUID]
	if ok && update <= old.update {
		return k.UUID, old.mark(), false
	}
	s := alertSeen{update: update, create: create}
	a.seen[k.UUID] = s
	return k.UUID, s.mark(), true
}

func (s alertSeen) mark() cursor.AlertMark {
	return cursor.AlertMark{Update: time.UnixMilli(s.update).UTC(), Create: time.UnixMilli(s.create).UTC()}
}

// Seed sets the mark of uuid as loaded from the checkpoint, so that a
// restart emits only the alerts that changed since.
func (a *Tracker) Seed(uuid string, m cursor.AlertMark) {
	if uuid == "" {
		return
	}
	a.seen[uuid] = alertSeen{update: m.Update.UnixMilli(), create: m.Create.UnixMilli()}
}

// Len returns how many alerts the tracker remembers.
func (a *Tracker) Len() int { return len(a.seen) }

// Creates returns the creation times of the alerts remembered that were
// created in [from, to): what sizes the windows of a follow
// (recheck.FollowWindows).
func (a *Tracker) Creates(from, to time.Time) []time.Time {
	f, t := from.UnixMilli(), to.UnixMilli()
	var out []time.Time
	for _, s := range a.seen {
		if s.create >= f && s.create < t {
			out = append(out, time.UnixMilli(s.create).UTC())
		}
	}
	return out
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

// Prune forgets alerts created before from, and the oldest ones past the
// size bound.
func (a *Tracker) Prune(from time.Time) {
	cut := from.UnixMilli()
	for id, s := range a.seen {
		if s.create < cut {
			delete(a.seen, id)
		}
	}
	if len(a.seen) <= MaxTracked {
		return
	}
	creates := make([]int64, 0, len(a.seen))
	for _, s := range a.seen {
		creates = append(creates, s.create)
	}
	slices.Sort(creates)
	cut = creates[len(creates)-MaxTracked]
	for id, s := range a.seen {
		if s.create < cut {
			delete(a.seen, id)
		}
	}
}

// Known reports whether the tracker has a mark for uuid.
func (a *Tracker) Known(uuid string) bool {
	_, ok := a.seen[uuid]
	return ok
}

// UUID returns the uuid of an alert record, "" when it has none.
func UUID(raw json.RawMessage) string {
	var k alertKey
	if json.Unmarshal(raw, &k) != nil {
		return ""
	}
	return k.UUID
}
