package pipeline

import (
	"context"
	"fmt"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
)

// recoverSinks makes every sink that keeps a ledger (sink.Ledger) agree
// with the checkpoint before anything is written: each recovers to the
// mark its last commit stored, and what it holds past the mark becomes
// its skip set. Then a fresh mark of each is committed, so that a crash
// before the run's first commit recovers to this point.
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
	fresh := checkpoint.Changes{Marks: map[string][]byte{}}
	for _, t := range ledgers {
		stored, err := t.ledger.Recover(ctx, marks[t.Name])
		if err != nil {
			return fmt.Errorf("sink %s: recover to the checkpoint: %w", t.Name, err)
		}
		n := 0
		for _, ids := range stored {
			n += len(ids)
		}
		if n > 0 {
			p.log.Info("the sink holds records the checkpoint does not cover; they are not written to it again", "sink", t.Name, "records", n)
		}
		t.skip = stored
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

// unstored returns b without the records t holds already (its skip set),
// b itself when it holds none of them, and nil when nothing of b is left
// to write (or b is nil). The batch is shared by the sinks: a filtered
// one is a copy.
func (t *target) unstored(b *record.Batch) *record.Batch {
	if b == nil {
		return nil
	}
	if t.skip == nil {
		return b
	}
	// A sink may know a record under its own account rather than the
	// stream's (an edge stream's records name theirs, C6).
	var keep []record.Envelope
	left := 0
	for i := range b.Envelopes {
		e := &b.Envelopes[i]
		if t.skipped(record.Stream{Source: b.Source, Account: b.Account}, e.ID) ||
			e.Account != b.Account && t.skipped(record.Stream{Source: b.Source, Account: e.Account}, e.ID) {
			left++
			continue
		}
		keep = append(keep, *e)
	}
	if left == 0 {
		return b
	}
	t.suppressed.WithLabelValues(b.Source, b.Account).Add(float64(left))
	if len(keep) == 0 {
		return nil
	}
	c := *b
	c.Envelopes = keep
	return &c
}

// skipped reports whether t holds id of stream k, and forgets it: a
// record stored once is left out once.
func (t *target) skipped(k record.Stream, id string) bool {
	t.skipMu.Lock()
	defer t.skipMu.Unlock()
	ids := t.skip[k]
	if _, ok := ids[id]; !ok {
		return false
	}
	delete(ids, id)
	return true
}
