package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// A sink that keeps a ledger (sink.Ledger) recovers at start to the mark
// its last commit stored, and what it holds past the mark becomes its skip
// set: those records are not written to it again. The skip set must
// outlive a crash of the run that recovered (a crash loop): the run
// commits a fresh mark at once, past which the sink's next Recover looks,
// so the pipeline keeps in the checkpoint, beside the mark, the ids of
// the skip set not yet resolved: an id is resolved once the page that
// left it out is committed (the checkpoint covers the record then). A
// resolved id still kept is harmless (its record is never written again:
// the source remembers it as delivered).

// remainKey is the key of a sink's unresolved skip set among the marks.
func remainKey(name string) string { return name + "\x00skip" }

// remainPersistEvery bounds how often the shrinking unresolved skip set
// of a sink is written to the checkpoint.
const remainPersistEvery = 5 * time.Second

// consumed is an id of a skip set that page seq of a stream left out.
type consumed struct {
	seq uint64
	key record.Stream // where the id is in remain
	id  string
}

// storedJSON is the checkpoint's form of a skip set.
type storedJSON struct {
	Source  string   `json:"s"`
	Account string   `json:"a"`
	IDs     []string `json:"ids"`
}

func encodeStored(s sink.Stored) []byte {
	out := make([]storedJSON, 0, len(s))
	for k, ids := range s {
		if len(ids) == 0 {
			continue
		}
		e := storedJSON{Source: k.Source, Account: k.Account}
		for id := range ids {
			e.IDs = append(e.IDs, id)
		}
		out = append(out, e)
	}
	b, _ := json.Marshal(out)
	return b
}

func decodeStored(b []byte, into sink.Stored) error {
	if len(b) == 0 {
		return nil
	}
	var in []storedJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	for _, e := range in {
		k := record.Stream{Source: e.Source, Account: e.Account}
		if into[k] == nil {
			into[k] = map[string]struct{}{}
		}
		for _, id := range e.IDs {
			into[k][id] = struct{}{}
		}
	}
	return nil
}

// recoverSinks makes every ledger sink agree with the checkpoint before
// anything is written (see above), then commits a fresh mark of each with
// its unresolved skip set, so that a crash before the run's first commit
// recovers to this point.
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
		if stored == nil {
			stored = sink.Stored{}
		}
		if err := decodeStored(marks[remainKey(t.Name)], stored); err != nil {
			return fmt.Errorf("sink %s: the checkpoint's skip set is unreadable: %w", t.Name, err)
		}
		n := 0
		remain := make(sink.Stored, len(stored))
		for k, ids := range stored {
			n += len(ids)
			remain[k] = make(map[string]struct{}, len(ids))
			for id := range ids {
				remain[k][id] = struct{}{}
			}
		}
		if n > 0 {
			p.log.Info("the sink holds records the checkpoint does not cover; they are not written to it again", "sink", t.Name, "records", n)
		}
		t.skip, t.remain, t.persisted = stored, remain, p.now()
		if fresh.Marks[t.Name], err = t.ledger.Mark(ctx, nil); err != nil {
			return fmt.Errorf("sink %s: mark: %w", t.Name, err)
		}
		fresh.Marks[remainKey(t.Name)] = encodeStored(remain)
	}
	if err := p.store.Apply(ctx, fresh); err != nil {
		return fmt.Errorf("commit the sinks' marks: %w", err)
	}
	return nil
}

// marks returns the mark of every ledger sink for a commit that covers,
// per stream of next, the pages below next[k], and the unresolved skip
// set of those whose set shrank (now and then, see remainPersistEvery).
func (p *Pipeline) marks(ctx context.Context, next map[record.Stream]uint64) (map[string][]byte, error) {
	var out map[string][]byte
	now := p.now()
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
		if r, ok := t.resolve(next, now); ok {
			out[remainKey(t.Name)] = r
		}
	}
	return out, nil
}

// resolve forgets the ids of t's skip set that pages below next left
// out, and returns the unresolved set to store when it shrank and was
// last stored long enough ago (or became empty).
func (t *target) resolve(next map[record.Stream]uint64, now time.Time) ([]byte, bool) {
	t.skipMu.Lock()
	defer t.skipMu.Unlock()
	if t.remain == nil {
		return nil, false
	}
	for k, n := range next {
		cs := t.consumed[k]
		kept := cs[:0]
		for _, c := range cs {
			if c.seq >= n {
				kept = append(kept, c)
				continue
			}
			delete(t.remain[c.key], c.id)
			if len(t.remain[c.key]) == 0 {
				delete(t.remain, c.key)
			}
		}
		if len(kept) < len(cs) {
			t.consumed[k] = kept
			t.remainDirty = true
		}
	}
	if !t.remainDirty || len(t.remain) > 0 && now.Sub(t.persisted) < remainPersistEvery {
		return nil, false
	}
	t.remainDirty, t.persisted = false, now
	return encodeStored(t.remain), true
}

// unstored returns b without the records t holds already (its skip set),
// b itself when it holds none of them, and nil when nothing of b is left
// to write (or b is nil). The batch is shared by the sinks: a filtered
// one is a copy, made only once a record is left out (every ledger sink
// has a skip set, mostly empty: a copy of every batch for it was the
// pipeline's largest allocation).
func (t *target) unstored(b *record.Batch) *record.Batch {
	if b == nil {
		return nil
	}
	if t.skip == nil {
		return b
	}
	t.skipMu.Lock()
	defer t.skipMu.Unlock()
	if t.skipEmptyLocked() {
		return b
	}
	// A sink may know a record under its own account rather than the
	// stream's (an edge stream's records name theirs, C6).
	bk := record.Stream{Source: b.Source, Account: b.Account}
	var keep []record.Envelope
	left := 0
	for i := range b.Envelopes {
		e := &b.Envelopes[i]
		if t.skippedLocked(bk, bk, b.Seq, e.ID) ||
			e.Account != b.Account && t.skippedLocked(bk, record.Stream{Source: b.Source, Account: e.Account}, b.Seq, e.ID) {
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
	t.suppressed.WithLabelValues(b.Source, b.Account).Add(float64(left))
	if len(keep) == 0 {
		return nil
	}
	c := *b
	c.Envelopes = keep
	return &c
}

// skipEmptyLocked reports whether no id is left in t's skip set (the usual
// case: a sink holds nothing past its mark, or every id was left out once
// already). t.skipMu is held.
func (t *target) skipEmptyLocked() bool {
	for _, ids := range t.skip {
		if len(ids) > 0 {
			return false
		}
	}
	return true
}

// skippedLocked reports whether t holds id under k, and forgets it there:
// a record stored once is left out once. The page seq of stream bk left
// it out: it is resolved once that page is committed. t.skipMu is held.
func (t *target) skippedLocked(bk, k record.Stream, seq uint64, id string) bool {
	ids := t.skip[k]
	if _, ok := ids[id]; !ok {
		return false
	}
	delete(ids, id)
	if t.consumed == nil {
		t.consumed = map[record.Stream][]consumed{}
	}
	t.consumed[bk] = append(t.consumed[bk], consumed{seq: seq, key: k, id: id})
	return true
}
