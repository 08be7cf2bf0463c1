package source

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// dbMemory is the pipeline's Remembers over a real checkpoint file, for
// the tests of the filter alone: nothing is pending.
type dbMemory struct {
	db *checkpoint.DB
	k  record.Stream
}

func (d dbMemory) DeliveredOf(ctx context.Context, keys []cursor.Delivered) ([]int, error) {
	return d.db.DeliveredOf(ctx, d.k, keys)
}
func (dbMemory) Committed() uint64 { return 0 }

func (d dbMemory) DeliveredEnd(ctx context.Context) (time.Time, error) {
	return d.db.DeliveredEnd(ctx, d.k)
}

func (d dbMemory) DeliveredCounts(ctx context.Context, from, to time.Time) ([]int64, error) {
	return d.db.DeliveredCounts(ctx, d.k, from, to)
}

func filterFixture(t *testing.T) (*checkpoint.DB, record.Stream) {
	t.Helper()
	db, err := checkpoint.Open(filepath.Join(t.TempDir(), "checkpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, record.Stream{Source: "dns", Account: "acme"}
}

// Two records whose keys agree (the first 64 bits of their ids and their
// time to the millisecond; made to collide here) are never taken for one:
// a page holding both, when the stream delivered one, delivers both (a
// copy, never a loss); a record alone of a key delivered before is left
// out.
func TestAPageWithMoreRecordsOfAKeyThanDeliveredDeliversThemAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, k := filterFixture(t)
	at := time.Date(2026, 11, 1, 10, 0, 0, 123_000_000, time.UTC)
	prefix := strings.Repeat("ab", 8)
	old := record.Envelope{ID: prefix + strings.Repeat("0", 48), Time: at}
	twin := record.Envelope{ID: prefix + strings.Repeat("1", 48), Time: at}
	other := record.Envelope{ID: strings.Repeat("cd", 32), Time: at.Add(time.Second)}
	if cursor.DeliveredOf(old.ID, old.Time) != cursor.DeliveredOf(twin.ID, twin.Time) {
		t.Fatal("the fixture's keys do not collide")
	}
	if err := db.Apply(ctx, checkpoint.Changes{
		States:    map[record.Stream]checkpoint.State{k: {Cursor: cursor.Cursor{Watermark: at.Add(-time.Hour)}}},
		Delivered: map[record.Stream][]cursor.Delivered{k: {cursor.DeliveredOf(old.ID, old.Time)}},
	}); err != nil {
		t.Fatal(err)
	}
	m := &memory{out: dbMemory{db, k}, set: map[cursor.Delivered]int{}}

	kept, keys, skipped, err := m.filter(ctx, []record.Envelope{twin, old, other})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 3 || skipped != 0 || len(keys) != 3 {
		t.Errorf("a page of both records of a delivered key and a new one: kept %d, skipped %d; want all 3 kept", len(kept), skipped)
	}
	kept, _, skipped, err = m.filter(ctx, []record.Envelope{old, other})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].ID != other.ID || skipped != 1 {
		t.Errorf("a page of the delivered record and a new one: kept %v, skipped %d; want only the new one", kept, skipped)
	}
	// A restart asks a window again: the same record one millisecond
	// apart is another record.
	moved := old
	moved.Time = at.Add(time.Millisecond)
	if kept, _, _, err = m.filter(ctx, []record.Envelope{moved}); err != nil || len(kept) != 1 {
		t.Errorf("the id of a delivered record at another time: kept %d (%v); want it delivered", len(kept), err)
	}
}

// The delivered set remembers what the pipeline has not committed yet:
// pages emitted and not yet committed are left out of a page asked again,
// and forgotten once committed (the checkpoint holds them then).
func TestPagesInThePipelineAreNotDeliveredTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, k := filterFixture(t)
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	e := record.Envelope{ID: strings.Repeat("ef", 32), Time: at}
	out := &countingMemory{dbMemory: dbMemory{db, k}}
	m := &memory{out: out, set: map[cursor.Delivered]int{}}
	_, keys, _, err := m.filter(ctx, []record.Envelope{e})
	if err != nil || len(keys) != 1 {
		t.Fatalf("first delivery: %d keys, %v", len(keys), err)
	}
	m.emit(keys)
	kept, _, skipped, err := m.filter(ctx, []record.Envelope{e})
	if err != nil || len(kept) != 0 || skipped != 1 {
		t.Errorf("asked again while in the pipeline: kept %d, skipped %d, %v; want it left out", len(kept), skipped, err)
	}
	// Committed: the pending keys go, the checkpoint has them.
	if err := db.Apply(ctx, checkpoint.Changes{
		States:    map[record.Stream]checkpoint.State{k: {Cursor: cursor.Cursor{Watermark: at.Add(-time.Hour)}}},
		Delivered: map[record.Stream][]cursor.Delivered{k: keys},
	}); err != nil {
		t.Fatal(err)
	}
	out.committed = 1
	kept, _, _, err = m.filter(ctx, []record.Envelope{e})
	if err != nil || len(kept) != 0 || len(m.pending) != 0 {
		t.Errorf("asked again once committed: kept %d, %d pages pending, %v; want it left out and nothing pending", len(kept), len(m.pending), err)
	}
}

type countingMemory struct {
	dbMemory
	committed uint64
}

func (c *countingMemory) Committed() uint64 { return c.committed }
