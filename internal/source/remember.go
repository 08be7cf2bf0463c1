package source

import (
	"context"
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Remembers is an Output that keeps what the stream delivered (the
// pipeline's, over the checkpoint): with it a poller delivers each record
// once, whatever asks a period again (a recheck that found growth, a chain
// restarted after its next-page URL expired, a window asked again in
// parts, a resume after a restart). An Output without it (tools, tests)
// delivers every record fetched.
type Remembers interface {
	// DeliveredOf returns how many records of each of keys the stream's
	// delivered set holds, as last committed (counts[i] for keys[i]).
	DeliveredOf(ctx context.Context, keys []cursor.Delivered) ([]int, error)
	// DeliveredEnd returns a time no committed delivered record is at or
	// after (zero when none was).
	DeliveredEnd(ctx context.Context) (time.Time, error)
	// DeliveredCounts returns how many records of the stream's delivered
	// set, as committed, lie in each minute of record time that [from,
	// to) touches, cut to [from, to) (checkpoint.DB.DeliveredCounts): a
	// recheck narrows a grown window below its bounds with them.
	DeliveredCounts(ctx context.Context, from, to time.Time) ([]int64, error)
	// Committed is how many of the pages this run emitted (counted from
	// 0, in order) are committed, the oldest first.
	Committed() uint64
}

// memory is a poller's side of Remembers: the keys of the pages it
// emitted that may not be committed yet (the checkpoint does not know
// them), so that asking again while they are in the pipeline does not
// deliver them twice either. It holds at most the pipeline's buffer of
// keys.
type memory struct {
	out     Remembers
	emitted uint64                   // pages emitted by this run
	pending []pendingKeys            // pages emitted and maybe not committed, oldest first
	set     map[cursor.Delivered]int // the keys of pending, counted
	// storeEnd is past every record time the checkpoint holds (Unix
	// milliseconds: read at the run's start, moved as pending pages are
	// committed); loaded is whether it was read. A page whose records all
	// lie at or after it needs no read of the checkpoint.
	storeEnd int64
	loaded   bool
}

type pendingKeys struct {
	seq  uint64
	keys []cursor.Delivered
}

func newMemory(out Output) *memory {
	r, ok := out.(Remembers)
	if !ok {
		return nil
	}
	return &memory{out: r, set: map[cursor.Delivered]int{}}
}

// filter returns the envelopes of envs not delivered before, and their
// keys (the page's cursor.Page.Delivered), and how many it left out.
//
// A key stands for a record only when the id's first 64 bits and the
// record time to the millisecond agree; and a page holding more records of
// one key than the stream delivered of it delivers all of them: a doubt
// (two records of one key) resolves toward delivering.
func (m *memory) filter(ctx context.Context, envs []record.Envelope) ([]record.Envelope, []cursor.Delivered, int, error) {
	if m == nil || len(envs) == 0 {
		return envs, nil, 0, nil
	}
	keys := make([]cursor.Delivered, len(envs))
	lo := int64(1 << 62)
	for i := range envs {
		keys[i] = cursor.DeliveredOf(envs[i].ID, envs[i].Time)
		lo = min(lo, keys[i].Time)
	}
	if !m.loaded {
		end, err := m.out.DeliveredEnd(ctx)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("read the delivered set: %w", err)
		}
		if !end.IsZero() {
			m.storeEnd = end.UnixMilli()
		}
		m.loaded = true
	}
	// What the checkpoint holds now leaves the pending keys first (and
	// moves storeEnd), then the checkpoint is read: a page committed in
	// between is in both, which a key's count takes once (max).
	m.prune()
	var stored []int // per key, what the checkpoint holds of it
	if lo < m.storeEnd {
		var err error
		if stored, err = m.out.DeliveredOf(ctx, keys); err != nil {
			return nil, nil, 0, fmt.Errorf("read the delivered set: %w", err)
		}
	}
	have := func(i int) int {
		n := m.set[keys[i]]
		if stored != nil {
			n = max(n, stored[i])
		}
		return n
	}
	any := false
	for i := range keys {
		if have(i) > 0 {
			any = true
			break
		}
	}
	if !any {
		return envs, keys, 0, nil
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
	return kept, keptKeys, len(envs) - len(kept), nil
}

// emit records that the next page emitted holds keys.
func (m *memory) emit(keys []cursor.Delivered) {
	if m == nil {
		return
	}
	m.prune()
	if len(keys) > 0 {
		m.pending = append(m.pending, pendingKeys{seq: m.emitted, keys: keys})
		for _, k := range keys {
			m.set[k]++
		}
	}
	m.emitted++
}

// prune forgets the pending keys of pages the checkpoint holds now.
func (m *memory) prune() {
	committed := m.out.Committed()
	n := 0
	for n < len(m.pending) && m.pending[n].seq < committed {
		for _, k := range m.pending[n].keys {
			m.storeEnd = max(m.storeEnd, k.Time+1) // the checkpoint has it now
			if m.set[k] <= 1 {
				delete(m.set, k)
			} else {
				m.set[k]--
			}
		}
		n++
	}
	m.pending = m.pending[n:]
}

// counts returns the delivered counts of the minutes of [from, to), as
// committed (Remembers.DeliveredCounts), and false without a delivered
// set. Keys still in the pipeline are left out: a count too small only
// costs a range fetched again, never a record.
func (m *memory) counts(ctx context.Context, from, to time.Time) ([]int64, bool, error) {
	if m == nil {
		return nil, false, nil
	}
	cs, err := m.out.DeliveredCounts(ctx, from, to)
	if err != nil {
		return nil, false, fmt.Errorf("read the delivered set: %w", err)
	}
	return cs, true, nil
}
