package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// A delivered set is stored in the same transaction as the state it
// belongs to, read back by record time, cut before the earliest time the
// stream may ask again (its watermark, or its oldest window log entry),
// and removed with the stream by Reset; it costs DeliveredBytesPerRecord
// per record.
func TestDeliveredSetsCommitWithTheStateAndAreCutBehindTheWatermark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "checkpoint.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k := record.Stream{Source: "dns", Account: "acme"}
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var keys []cursor.Delivered
	for i := range 10_000 {
		keys = append(keys, cursor.Delivered{Hash: uint64(i) * 0x9e3779b97f4a7c15, Time: base.Add(time.Duration(i) * 36 * time.Millisecond).UnixMilli()})
	}
	before, _ := os.Stat(path)
	if err := db.Apply(ctx, Changes{
		States:    map[record.Stream]State{k: {Watermark: base}},
		Delivered: map[record.Stream][]cursor.Delivered{k: keys},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.DeliveredIn(ctx, k, base, base.Add(time.Hour))
	if err != nil || len(got) != len(keys) {
		t.Fatalf("read back %d of %d keys (%v)", len(got), len(keys), err)
	}
	half, err := db.DeliveredIn(ctx, k, base.Add(3*time.Minute), base.Add(4*time.Minute))
	if err != nil || len(half) == 0 || len(half) >= len(keys) {
		t.Fatalf("one minute of six: %d keys (%v)", len(half), err)
	}
	for _, d := range half {
		if d.Time < base.Add(3*time.Minute).UnixMilli() || d.Time >= base.Add(4*time.Minute).UnixMilli() {
			t.Fatalf("key at %d outside the minute asked", d.Time)
		}
	}
	after, _ := os.Stat(path)
	t.Logf("%d keys: file %d -> %d bytes (%d bytes a record kept, bbolt pages included)", len(keys), before.Size(), after.Size(),
		(after.Size()-before.Size())/int64(len(keys)))

	// The watermark passes the first three minutes and no window log
	// entry holds them: they are forgotten, the rest kept.
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Watermark: base.Add(3 * time.Minute)}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.DeliveredIn(ctx, k, base, base.Add(3*time.Minute)); len(got) != 0 {
		t.Errorf("%d keys kept behind the watermark", len(got))
	}
	if got, _ := db.DeliveredIn(ctx, k, base.Add(3*time.Minute), base.Add(time.Hour)); len(got) == 0 {
		t.Errorf("keys ahead of the watermark were cut")
	}
	// A logged window may be rechecked: its minutes stay.
	if err := db.Apply(ctx, Changes{
		States:  map[record.Stream]State{k: {Watermark: base.Add(time.Hour)}},
		Windows: map[record.Stream]cursor.WindowChanges{k: {Put: []cursor.LoggedWindow{{Start: base.Add(5 * time.Minute), End: base.Add(6 * time.Minute), Count: 1, FetchedAt: base}}}},
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.DeliveredIn(ctx, k, base.Add(5*time.Minute), base.Add(6*time.Minute)); len(got) == 0 {
		t.Errorf("the keys of a logged window were cut")
	}
	if got, _ := db.DeliveredIn(ctx, k, base.Add(3*time.Minute), base.Add(5*time.Minute)); len(got) != 0 {
		t.Errorf("%d keys kept before the oldest logged window", len(got))
	}
	if _, err := db.Reset(ctx, "dns", "acme"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.DeliveredIn(ctx, k, base, base.Add(time.Hour)); len(got) != 0 {
		t.Errorf("%d keys kept after Reset", len(got))
	}
}

// A file of an older collector has no delivered sets: they read empty,
// and the first commit adds them.
func TestAnOlderFileHasEmptyDeliveredSets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(copyFile(t, compatFile, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k := record.Stream{Source: "dns", Account: "acme"}
	st := compatStates()[k]
	if got, err := db.DeliveredIn(ctx, k, st.Watermark.Add(-time.Hour), st.Watermark.Add(time.Hour)); err != nil || len(got) != 0 {
		t.Fatalf("older file: %d keys, %v", len(got), err)
	}
	d := cursor.Delivered{Hash: 7, Time: st.Watermark.Add(time.Minute).UnixMilli()}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: st}, Delivered: map[record.Stream][]cursor.Delivered{k: {d}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.DeliveredIn(ctx, k, st.Watermark, st.Watermark.Add(time.Hour)); err != nil || len(got) != 1 || got[0] != d {
		t.Fatalf("after a commit: %v, %v", got, err)
	}
}
