package pipeline

import (
	"context"
	"fmt"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// A sink that keeps a ledger (sink.Ledger) recovers at start to the mark
// its last commit stored, and what it holds past the mark (sink.Held, in
// the key form of the delivered sets) joins its held set: those records
// are not written to it again (CONTRACT C7: each record once in each
// sink). The held set must outlive a crash of the run that recovered (a
// crash loop): the run commits a fresh mark at once, past which the
// sink's next Recover looks, so the same commit adds what Recover found
// to the sink's held set in the checkpoint, which keeps it as it keeps
// the delivered sets and cuts it at the stream's horizon. Nothing is
// taken out of it when a page leaves a record out: once that page is
// committed, the stream's delivered set (or, for edge alerts, its alert
// mark) keeps the record from every sink, and the checkpoint cuts the
// entry when the period can no longer be asked (for edge alerts, where
// their marks are cut: their re-asks reach far behind the watermark).

// recoverSinks makes every ledger sink agree with the checkpoint before
// anything is written (see above), loads its held set, and commits a
// fresh mark of each with what its Recover found, so that a crash before
// the run's first commit recovers to this point.
func (p *Pipeline) recoverSinks(ctx context.Context) error {
	var ledgers []*target
	for _, t := range p.targets {
		if t.ledger != nil {
			ledgers = append(ledgers, t)
		}
	}
	if len(ledgers) == 0 {
		return nil
	}
	marks, err := p.store.Marks(ctx)
	if err != nil {
		return fmt.Errorf("load the sinks' marks: %w", err)
	}
	held, err := p.store.Held(ctx)
	if err != nil {
		return fmt.Errorf("load the sinks' held sets: %w", err)
	}
	fresh := checkpoint.Changes{Marks: map[string][]byte{}, Held: map[string]map[record.Stream][]cursor.Delivered{}}
	for _, t := range ledgers {
		found, err := t.ledger.Recover(ctx, marks[t.Name])
		if err != nil {
			return fmt.Errorf("sink %s: recover to the checkpoint: %w", t.Name, err)
		}
		t.hold(held[t.Name])
		if n := t.hold(found); n > 0 {
			p.log.Info("the sink holds records the checkpoint does not cover; they are not written to it again", "sink", t.Name, "records", n)
			fresh.Held[t.Name] = found
		}
		if fresh.Marks[t.Name], err = t.ledger.Mark(ctx, nil); err != nil {
			return fmt.Errorf("sink %s: mark: %w", t.Name, err)
		}
	}
	if err := p.store.Apply(ctx, fresh); err != nil {
		return fmt.Errorf("commit the sinks' marks: %w", err)
	}
	return nil
}

// marks returns the mark of every ledger sink for a commit that covers,
// per stream of next, the pages below next[k].
func (p *Pipeline) marks(ctx context.Context, next map[record.Stream]uint64) (map[string][]byte, error) {
	var out map[string][]byte
	for _, t := range p.targets {
		if t.ledger == nil {
			continue
		}
		m, err := t.ledger.Mark(ctx, next)
		if err != nil {
			return nil, fmt.Errorf("sink %s: mark: %w", t.Name, err)
		}
		if out == nil {
			out = map[string][]byte{}
		}
		out[t.Name] = m
	}
	return out, nil
}

// hold adds h to what t holds and returns how many entries it added.
// Entries are counted by their id hash (cursor.Delivered.Hash): 64 bits
// of the record's C7 id, a SHA-256 over the record, its time included, so
// that they name the record alone; the time is where the checkpoint files
// and cuts an entry, and an entry of an earlier collector's held set has
// none (checkpoint: held sets).
func (t *target) hold(h sink.Held) int {
	n := 0
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	for k, keys := range h {
		if len(keys) == 0 {
			continue
		}
		if t.held == nil {
			t.held = map[record.Stream]map[uint64]int{}
		}
		if t.held[k] == nil {
			t.held[k] = map[uint64]int{}
		}
		for _, d := range keys {
			t.held[k][d.Hash]++
		}
		n += len(keys)
	}
	t.heldLeft.Add(int64(n))
	return n
}

// unstored returns b without the records t holds already (its held set),
// b itself when it holds none of them, and nil when nothing of b is left
// to write (or b is nil). A record held once is left out once. The batch
// is shared by the sinks: a filtered one is a copy, made only once a
// record is left out (a copy of every batch for every ledger sink was the
// pipeline's largest allocation).
func (t *target) unstored(b *record.Batch) *record.Batch {
	if b == nil {
		return nil
	}
	if t.heldLeft.Load() == 0 {
		return b
	}
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	// A sink may know a record under its own account rather than the
	// stream's (an edge stream's records name theirs, C6).
	bk := b.Stream()
	var keep []record.Envelope
	left := 0
	for i := range b.Envelopes {
		e := &b.Envelopes[i]
		h := cursor.DeliveredOf(e.ID, e.Time).Hash
		if t.takeHeldLocked(bk, h) || e.Account != b.Account && t.takeHeldLocked(record.Stream{Tenant: b.Tenant, Source: b.Source, Account: e.Account}, h) {
			if left == 0 {
				keep = make([]record.Envelope, i, len(b.Envelopes)-1)
				copy(keep, b.Envelopes[:i])
			}
			left++
			continue
		}
		if left > 0 {
			keep = append(keep, *e)
		}
	}
	if left == 0 {
		return b
	}
	t.suppressed.WithLabelValues(t.lv(b.Stream())...).Add(float64(left))
	if len(keep) == 0 {
		return nil
	}
	c := *b
	c.Envelopes = keep
	return &c
}

// takeHeldLocked reports whether t holds a record of id hash h under k,
// and takes one count of it. t.heldMu is held.
func (t *target) takeHeldLocked(k record.Stream, h uint64) bool {
	n := t.held[k][h]
	if n == 0 {
		return false
	}
	if n == 1 {
		delete(t.held[k], h)
	} else {
		t.held[k][h] = n - 1
	}
	t.heldLeft.Add(-1)
	return true
}
