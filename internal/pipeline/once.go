package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
)

// Causes of collector_duplicates_suppressed_total: why a record the
// stream delivered before came again.
const (
	// SuppressedRecheck: a recheck (or an edge alert revisit) asked a
	// period again and found it grown.
	SuppressedRecheck = "recheck"
	// SuppressedRefetch: a window asked again on its forward path: a
	// chain restarted after its next-page URL expired, a window asked
	// again in parts, a resume after a restart.
	SuppressedRefetch = "refetch"
)

// once is the re-ask filter of one stream, where "each record once"
// (CONTRACT C7) is decided for what the poller asks again (a recheck that
// found growth, a chain restarted after its next-page URL expired, a
// window asked again in parts, a resume after a restart): every page the
// stream's producer emits passes it, at Emit, before it takes room in the
// buffer. It leaves out the records the stream holds already, which are
// of two kinds:
//
//   - delivered: in the stream's delivered set in the checkpoint
//     (committed to every sink), read only when the page has a record
//     before the set's end;
//   - in flight: the keys of pages emitted and not yet committed, which
//     the commit that covers them releases (released).
//
// A key stands for a record only when the id's first 64 bits and the
// record time to the millisecond agree (cursor.DeliveredOf); a page
// holding more records of one key than the stream holds delivers all of
// them: a doubt resolves toward delivering (a copy, never a loss). The
// page's cursor.Page.Delivered are the keys of what it kept.
//
// It counts what it leaves out (collector_duplicates_suppressed_total,
// collector_refetched_rows_total) and hands what a page added to the
// stream's learner (recheck.Observer), whose delays the page's cursor
// then carries.
type once struct {
	store  Store
	stream record.Stream
	learn  recheck.Observer // nil: none
	m      *metrics
	// sm are the stream's series, bound once (not looked up by label
	// values at every page).
	sm onceSeries

	mu sync.Mutex
	// pending are the keys of the pages emitted and not yet committed,
	// oldest first, each page's sorted: a key in flight is searched in
	// them (flying). They are what the pipeline's buffer and one commit
	// hold, nothing more: no index of them to outgrow them (a map never
	// shrinks; issue 30).
	pending []pendingPage
	// end is past every record time the checkpoint holds (Unix
	// milliseconds: read with the first page, moved as pending pages are
	// committed); loaded is whether it was read. A page whose records all
	// lie at or after it needs no read of the checkpoint.
	end    int64
	loaded bool
}

// pendingPage is the keys of the page of sequence seq, sorted
// (compareKeys).
type pendingPage struct {
	seq  uint64
	keys []cursor.Delivered
}

func newOnce(store Store, k record.Stream, learn recheck.Observer, m *metrics) *once {
	return &once{store: store, stream: k, learn: learn, m: m, sm: m.onceSeries(k)}
}

// filter returns pg with only the records the stream does not hold, its
// Delivered set to their keys, and its cursor's delays what the stream's
// learner learnt of them.
func (o *once) filter(ctx context.Context, pg cursor.Page) (cursor.Page, error) {
	if pg.Asked == cursor.AskedInventory {
		pg.Delivered = nil
		if o.learn != nil {
			pg.After.Delays = o.learn.Delays()
		}
		return pg, nil
	}
	envs := pg.Batch.Envelopes
	kept, keys, err := o.keep(ctx, envs)
	if err != nil {
		return pg, err
	}
	left := len(envs) - len(kept)
	if pg.Asked != cursor.AskedForward || left > 0 {
		cause := SuppressedRefetch
		if pg.Asked != cursor.AskedForward {
			cause = SuppressedRecheck
		}
		o.sm.refetched.Add(float64(len(envs)))
		if cause == SuppressedRecheck {
			o.sm.suppressedRecheck.Add(float64(left))
		} else {
			o.sm.suppressedRefetch.Add(float64(left))
		}
	}
	pg.Batch.Envelopes, pg.Delivered = kept, keys
	if pg.Asked == cursor.AskedForward || pg.Asked == cursor.AskedLate {
		// Every new record, on time or late: how long after its record
		// time it was fetched (alert updates are not new records).
		o.sm.delays(kept, pg.FetchedAt, pg.Asked == cursor.AskedLate)
	}
	if o.learn != nil {
		switch pg.Asked {
		case cursor.AskedForward:
			o.learn.ObserveFresh(len(kept), pg.FetchedAt)
		case cursor.AskedLate:
			o.learn.ObserveLate(kept, pg.FetchedAt)
		}
		pg.After.Delays = o.learn.Delays()
	}
	return pg, nil
}

// keep returns the envelopes of envs the stream does not hold, and their
// keys.
func (o *once) keep(ctx context.Context, envs []record.Envelope) ([]record.Envelope, []cursor.Delivered, error) {
	if len(envs) == 0 {
		return envs, nil, nil
	}
	keys := make([]cursor.Delivered, len(envs))
	lo := int64(1 << 62)
	for i := range envs {
		keys[i] = cursor.DeliveredOf(envs[i].ID, envs[i].Time)
		lo = min(lo, keys[i].Time)
	}
	if err := o.load(ctx); err != nil {
		return nil, nil, err
	}
	// The keys in flight are taken before the checkpoint is read: a page
	// committed in between is in both, which a key's count takes once
	// (max); one committed before is in the checkpoint read after.
	o.mu.Lock()
	flying := o.flying(keys)
	end := o.end
	o.mu.Unlock()
	var stored []int // per key, what the checkpoint holds of it
	if lo < end {
		var err error
		if stored, err = o.store.DeliveredOf(ctx, o.stream, keys); err != nil {
			return nil, nil, fmt.Errorf("read the delivered set: %w", err)
		}
	}
	have := func(i int) int {
		n := 0
		if flying != nil {
			n = int(flying[i])
		}
		if stored != nil {
			n = max(n, stored[i])
		}
		return n
	}
	held := false
	for i := range keys {
		if have(i) > 0 {
			held = true
			break
		}
	}
	if !held {
		return envs, keys, nil
	}
	page := make(map[cursor.Delivered]int, len(keys))
	for _, k := range keys {
		page[k]++
	}
	kept := envs[:0:0]
	keptKeys := keys[:0:0]
	for i, k := range keys {
		if page[k] <= have(i) {
			continue
		}
		kept = append(kept, envs[i])
		keptKeys = append(keptKeys, k)
	}
	return kept, keptKeys, nil
}

// load reads the end of the stream's delivered set, once.
func (o *once) load(ctx context.Context) error {
	o.mu.Lock()
	loaded := o.loaded
	o.mu.Unlock()
	if loaded {
		return nil
	}
	end, err := o.store.DeliveredEnd(ctx, o.stream)
	if err != nil {
		return fmt.Errorf("read the delivered set: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !end.IsZero() {
		o.end = max(o.end, end.UnixMilli())
	}
	o.loaded = true
	return nil
}

// flying returns, per key of keys, how many of it the pending pages hold;
// nil when they hold none of them. o.mu is held.
func (o *once) flying(keys []cursor.Delivered) []int32 {
	if len(o.pending) == 0 || len(keys) == 0 {
		return nil
	}
	lo, hi := keys[0].Time, keys[0].Time
	for _, k := range keys {
		lo, hi = min(lo, k.Time), max(hi, k.Time)
	}
	var n []int32
	for _, pp := range o.pending {
		if pp.keys[0].Time > hi || pp.keys[len(pp.keys)-1].Time < lo {
			continue // sorted by time: none of keys is in it
		}
		for i, k := range keys {
			j, found := slices.BinarySearchFunc(pp.keys, k, compareKeys)
			if !found {
				continue
			}
			if n == nil {
				n = make([]int32, len(keys))
			}
			for ; j < len(pp.keys) && pp.keys[j] == k; j++ {
				n[i]++
			}
		}
	}
	return n
}

// compareKeys orders keys by time, then hash.
func compareKeys(a, b cursor.Delivered) int {
	if c := cmp.Compare(a.Time, b.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Hash, b.Hash)
}

// emitted notes that the page of sequence seq, holding keys, is on its
// way to the sinks. It sorts keys in place (a page's keys are a set).
func (o *once) emitted(seq uint64, keys []cursor.Delivered) {
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, compareKeys)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = append(o.pending, pendingPage{seq: seq, keys: keys})
}

// released notes that every page of the stream below seq is committed:
// their keys are in the checkpoint's delivered set now.
func (o *once) released(seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for n < len(o.pending) && o.pending[n].seq < seq {
		keys := o.pending[n].keys
		o.end = max(o.end, keys[len(keys)-1].Time+1) // sorted: the last is the latest
		o.pending[n] = pendingPage{}
		n++
	}
	o.pending = o.pending[n:]
	if len(o.pending) == 0 {
		o.pending = nil // freed, not kept at its largest
	}
}
