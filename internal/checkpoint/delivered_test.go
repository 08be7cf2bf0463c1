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

// DeliveredCounts counts, per minute of record time, what DeliveredIn
// returns, cut to the range asked (partial minutes at both ends), across
// the values of several commits.
func TestDeliveredCountsAgreeWithTheKeysPerMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "checkpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k := record.Stream{Source: "dns", Account: "acme"}
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	for commit := range 3 {
		var keys []cursor.Delivered
		for i := range 2_000 {
			keys = append(keys, cursor.Delivered{Hash: uint64(i*7+commit) * 0x9e3779b97f4a7c15,
				Time: base.Add(time.Duration(i*(commit+1)*97) * time.Millisecond).UnixMilli()})
		}
		if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Watermark: base}},
			Delivered: map[record.Stream][]cursor.Delivered{k: keys}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range [][2]time.Duration{
		{0, 10 * time.Minute},
		{1500 * time.Millisecond, 59 * time.Second},                // inside one minute
		{59 * time.Second, 61 * time.Second},                       // across a minute mark
		{90 * time.Second, 7*time.Minute + 12345*time.Millisecond}, // partial at both ends
		{-time.Hour, 3 * time.Minute},                              // before any key
		{9 * time.Minute, 9*time.Minute + time.Hour},               // past the last key
	} {
		from, to := base.Add(r[0]), base.Add(r[1])
		counts, err := db.DeliveredCounts(ctx, k, from, to)
		if err != nil {
			t.Fatal(err)
		}
		m := from.Truncate(time.Minute)
		if want := int(to.Sub(m)+time.Minute-1) / int(time.Minute); len(counts) != want {
			t.Fatalf("[%v, %v): %d minutes, want %d", r[0], r[1], len(counts), want)
		}
		for i, n := range counts {
			lo, hi := m.Add(time.Duration(i)*time.Minute), m.Add(time.Duration(i+1)*time.Minute)
			lo, hi = maxTime(lo, from), minTime(hi, to)
			keys, err := db.DeliveredIn(ctx, k, lo, hi)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(keys)) != n {
				t.Errorf("[%v, %v) minute %d: count %d, keys %d", r[0], r[1], i, n, len(keys))
			}
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// The delays a stream learnt commit with its state, read back with it by
// All and Load, stay when a later state carries none, and go with Reset.
func TestDelaysCommitWithTheStateAndSurviveAReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "checkpoint.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	k := record.Stream{Source: "dns", Account: "acme"}
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	dl := cursor.Delays{Late: []float64{0, 3, 1.5}, Fresh: 1000, At: at}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Watermark: at, Delays: dl}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Watermark: at.Add(time.Minute)}}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := db.All(ctx)
	if err != nil || all[k].Delays.Fresh != 1000 || len(all[k].Delays.Late) != 3 || !all[k].Delays.At.Equal(at) {
		t.Fatalf("All: %+v, %v", all[k].Delays, err)
	}
	if s, ok, err := db.Load(ctx, k); err != nil || !ok || s.Delays.Late[1] != 3 {
		t.Fatalf("Load: %+v %v %v", s.Delays, ok, err)
	}
	if _, err := db.Reset(ctx, "dns", "acme"); err != nil {
		t.Fatal(err)
	}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Watermark: at}}}); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := db.Load(ctx, k); !s.Delays.Empty() {
		t.Errorf("delays kept after Reset: %+v", s.Delays)
	}
}
