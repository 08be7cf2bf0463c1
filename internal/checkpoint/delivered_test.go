package checkpoint

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// A delivered set is stored in the same transaction as the state it
// belongs to, read back by record time, cut by the hour (its values' span)
// before the earliest time the stream may ask again (its watermark, or its
// oldest window log entry), and removed with the stream by Reset; it costs
// DeliveredBytesPerRecord per record.
func TestDeliveredSetsCommitWithTheStateAndAreCutBehindTheWatermark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, path := openTemp(t)
	k := record.Stream{Source: "dns", Account: "acme"}
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var keys []cursor.Delivered
	for i := range 10_000 {
		keys = append(keys, cursor.Delivered{Hash: uint64(i) * 0x9e3779b97f4a7c15, Time: base.Add(time.Duration(i) * 2160 * time.Millisecond).UnixMilli()})
	}
	before, _ := os.Stat(path)
	if err := db.Apply(ctx, Changes{
		States:    map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: base}}},
		Delivered: map[record.Stream][]cursor.Delivered{k: keys},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.deliveredIn(ctx, k, base, base.Add(6*time.Hour))
	if err != nil || len(got) != len(keys) {
		t.Fatalf("read back %d of %d keys (%v)", len(got), len(keys), err)
	}
	half, err := db.deliveredIn(ctx, k, base.Add(3*time.Hour), base.Add(4*time.Hour))
	if err != nil || len(half) == 0 || len(half) >= len(keys) {
		t.Fatalf("one hour of six: %d keys (%v)", len(half), err)
	}
	for _, d := range half {
		if d.Time < base.Add(3*time.Hour).UnixMilli() || d.Time >= base.Add(4*time.Hour).UnixMilli() {
			t.Fatalf("key at %d outside the hour asked", d.Time)
		}
	}
	after, _ := os.Stat(path)
	t.Logf("%d keys: file %d -> %d bytes (%d bytes a record kept, bbolt pages included)", len(keys), before.Size(), after.Size(),
		(after.Size()-before.Size())/int64(len(keys)))

	// The watermark passes the first three hours and no window log
	// entry holds them: they are forgotten, the rest kept.
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: base.Add(3 * time.Hour)}}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.deliveredIn(ctx, k, base, base.Add(3*time.Hour)); len(got) != 0 {
		t.Errorf("%d keys kept behind the watermark", len(got))
	}
	if got, _ := db.deliveredIn(ctx, k, base.Add(3*time.Hour), base.Add(6*time.Hour)); len(got) == 0 {
		t.Errorf("keys ahead of the watermark were cut")
	}
	// A logged window may be rechecked: its hours stay.
	if err := db.Apply(ctx, Changes{
		States:  map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: base.Add(6 * time.Hour)}}},
		Windows: map[record.Stream]cursor.WindowChanges{k: {Put: []cursor.LoggedWindow{{Start: base.Add(5 * time.Hour), End: base.Add(6 * time.Hour), Count: 1, FetchedAt: base}}}},
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.deliveredIn(ctx, k, base.Add(5*time.Hour), base.Add(6*time.Hour)); len(got) == 0 {
		t.Errorf("the keys of a logged window were cut")
	}
	if got, _ := db.deliveredIn(ctx, k, base.Add(3*time.Hour), base.Add(5*time.Hour)); len(got) != 0 {
		t.Errorf("%d keys kept before the oldest logged window", len(got))
	}
	if _, err := db.Reset(ctx, "", "dns", "acme"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.deliveredIn(ctx, k, base, base.Add(6*time.Hour)); len(got) != 0 {
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
	if got, err := db.deliveredIn(ctx, k, st.Watermark.Add(-time.Hour), st.Watermark.Add(time.Hour)); err != nil || len(got) != 0 {
		t.Fatalf("older file: %d keys, %v", len(got), err)
	}
	d := cursor.Delivered{Hash: 7, Time: st.Watermark.Add(time.Minute).UnixMilli()}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: st}, Delivered: map[record.Stream][]cursor.Delivered{k: {d}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.deliveredIn(ctx, k, st.Watermark, st.Watermark.Add(time.Hour)); err != nil || len(got) != 1 || got[0] != d {
		t.Fatalf("after a commit: %v, %v", got, err)
	}
}

// DeliveredCounts counts, per minute of record time, what deliveredIn
// returns, cut to the range asked (partial minutes at both ends), across
// the values of several commits.
func TestDeliveredCountsAgreeWithTheKeysPerMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTemp(t)
	k := record.Stream{Source: "dns", Account: "acme"}
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	for commit := range 3 {
		var keys []cursor.Delivered
		for i := range 2_000 {
			keys = append(keys, cursor.Delivered{Hash: uint64(i*7+commit) * 0x9e3779b97f4a7c15,
				Time: base.Add(time.Duration(i*(commit+1)*97) * time.Millisecond).UnixMilli()})
		}
		if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: base}}},
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
			keys, err := db.deliveredIn(ctx, k, lo, hi)
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
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: at, Delays: dl}}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: at.Add(time.Minute)}}}}); err != nil {
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
	if _, err := db.Reset(ctx, "", "dns", "acme"); err != nil {
		t.Fatal(err)
	}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: at}}}}); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := db.Load(ctx, k); !s.Delays.Empty() {
		t.Errorf("delays kept after Reset: %+v", s.Delays)
	}
}

// A file of a collector that stored minute values (version 1) reads them
// beside the hour values written now: deliveredIn, DeliveredOf,
// DeliveredCounts and DeliveredEnd see both, and the cut behind the
// watermark forgets each by its own span.
func TestMinuteValuesOfAnEarlierCollectorReadBesideHourValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTemp(t)
	k := record.Stream{Source: "dns", Account: "acme"}
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration, h uint64) cursor.Delivered {
		return cursor.Delivered{Time: base.Add(d).UnixMilli(), Hash: h}
	}
	// Minute values as version 1 wrote them: 10:03 and 10:59, 11:00.
	old := map[time.Duration][]cursor.Delivered{
		3 * time.Minute:  {at(3*time.Minute+time.Second, 1), at(3*time.Minute+2*time.Second, 2)},
		59 * time.Minute: {at(59*time.Minute+59*time.Second, 3)},
		60 * time.Minute: {at(60*time.Minute+500*time.Millisecond, 4)},
	}
	err := db.update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketDelivered)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists(encodeKey(k))
		if err != nil {
			return err
		}
		for m, es := range old {
			start := base.Add(m).UnixMilli()
			v := []byte{deliveredV1}
			for _, e := range es {
				v = binary.BigEndian.AppendUint16(v, uint16(e.Time-start))
				v = binary.BigEndian.AppendUint64(v, e.Hash)
			}
			seq, _ := b.NextSequence()
			if err := b.Put(binary.BigEndian.AppendUint64(spanKey(start, minuteMillis), seq), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Hour values of this collector: one key already in a minute value.
	now := []cursor.Delivered{at(3*time.Minute+time.Second, 1), at(10*time.Minute, 5), at(61*time.Minute, 6)}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: base}}}, Delivered: map[record.Stream][]cursor.Delivered{k: now}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.deliveredIn(ctx, k, base, base.Add(2*time.Hour))
	if err != nil || len(got) != 7 {
		t.Fatalf("deliveredIn: %d keys (%v), want 7", len(got), err)
	}
	counts, err := db.DeliveredOf(ctx, k, []cursor.Delivered{at(3*time.Minute+time.Second, 1), at(60*time.Minute+500*time.Millisecond, 4), at(10*time.Minute, 9), at(3*time.Minute+time.Second, 1)})
	if err != nil || !slices.Equal(counts, []int{2, 1, 0, 2}) {
		t.Fatalf("DeliveredOf: %v (%v), want [2 1 0 2]", counts, err)
	}
	per, err := db.DeliveredCounts(ctx, k, base.Add(3*time.Minute+1500*time.Millisecond), base.Add(61*time.Minute+time.Millisecond))
	if err != nil || len(per) != 59 || per[0] != 1 || per[7] != 1 || per[56] != 1 || per[57] != 1 || per[58] != 1 {
		t.Fatalf("DeliveredCounts: %v (%v)", per, err)
	}
	if end, err := db.DeliveredEnd(ctx, k); err != nil || !end.Equal(base.Add(61*time.Minute+time.Millisecond)) {
		t.Fatalf("DeliveredEnd: %v (%v), want %v", end, err, base.Add(61*time.Minute+time.Millisecond))
	}
	// The watermark at 11:00:30: the minute values and the hour value
	// that end by then go; the minute of 11:00 and the hour of 11:00 stay.
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: base.Add(60*time.Minute + 30*time.Second)}}}}); err != nil {
		t.Fatal(err)
	}
	got, err = db.deliveredIn(ctx, k, base, base.Add(2*time.Hour))
	if err != nil || len(got) != 2 || got[0] != at(60*time.Minute+500*time.Millisecond, 4) || got[1] != at(61*time.Minute, 6) {
		t.Fatalf("after the cut at 11:00:30: %v (%v); want the minute value of 11:00 and the hour value of 11:00", got, err)
	}
}

// The delivered set's reads agree with a plain list of what was committed,
// over random commits (hour values, and minute values as earlier
// collectors wrote them) and random ranges, their ends on and off minute
// and hour marks: deliveredIn returns the keys in the range, DeliveredOf
// each key's count, DeliveredCounts the per-minute counts and
// DeliveredEnd a time past the latest key. A count too high would hide a
// window's growth from a recheck; a key reported that was not delivered
// would be a record left out.
func TestDeliveredReadsAgreeWithTheKeysCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	const span = 5 * 3600 * 1000 // 5 hours of record time
	for round := range 20 {
		db, _ := openTemp(t)
		k := record.Stream{Source: "dns", Account: "acme"}
		var all []cursor.Delivered
		key := func() cursor.Delivered {
			if len(all) > 0 && rng.IntN(10) == 0 {
				return all[rng.IntN(len(all))] // the same key again
			}
			ms := base + rng.Int64N(span)
			if rng.IntN(8) == 0 {
				ms -= floorMod(ms, minuteMillis) // on a minute mark
			}
			return cursor.Delivered{Time: ms, Hash: rng.Uint64N(50)}
		}
		// Minute values of an earlier collector first, then commits.
		var old []cursor.Delivered
		for range rng.IntN(200) {
			old = append(old, key())
		}
		slices.SortFunc(old, compareDelivered)
		if err := db.update(func(tx *bolt.Tx) error {
			root, err := tx.CreateBucketIfNotExists(bucketDelivered)
			if err != nil {
				return err
			}
			b, err := root.CreateBucketIfNotExists(encodeKey(k))
			if err != nil {
				return err
			}
			for len(old) > 0 {
				start := old[0].Time - floorMod(old[0].Time, minuteMillis)
				n := 1
				for n < len(old) && old[n].Time < start+minuteMillis {
					n++
				}
				v := []byte{deliveredV1}
				for _, e := range old[:n] {
					v = binary.BigEndian.AppendUint16(v, uint16(e.Time-start))
					v = binary.BigEndian.AppendUint64(v, e.Hash)
				}
				seq, _ := b.NextSequence()
				if err := b.Put(binary.BigEndian.AppendUint64(spanKey(start, minuteMillis), seq), v); err != nil {
					return err
				}
				all = append(all, old[:n]...)
				old = old[n:]
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(6) {
			var adds []cursor.Delivered
			for range rng.IntN(400) {
				adds = append(adds, key())
			}
			if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: time.UnixMilli(base)}}},
				Delivered: map[record.Stream][]cursor.Delivered{k: adds}}); err != nil {
				t.Fatal(err)
			}
			all = append(all, adds...)
		}
		end, err := db.DeliveredEnd(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var latest int64
		for _, d := range all {
			latest = max(latest, d.Time+1)
		}
		if len(all) > 0 && end.UnixMilli() != latest {
			t.Fatalf("round %d: DeliveredEnd %d, latest key + 1 ms %d", round, end.UnixMilli(), latest)
		}
		for range 30 {
			lo, hi := base-minuteMillis+rng.Int64N(span+2*minuteMillis), int64(0)
			switch rng.IntN(3) {
			case 0:
				lo -= floorMod(lo, hourMillis)
			case 1:
				lo -= floorMod(lo, minuteMillis)
			}
			hi = lo + 1 + rng.Int64N(2*hourMillis)
			if rng.IntN(3) == 0 {
				hi -= floorMod(hi, minuteMillis)
				hi = max(hi, lo+1)
			}
			var want []cursor.Delivered
			first := lo - floorMod(lo, minuteMillis)
			perMinute := make([]int64, (hi-first+minuteMillis-1)/minuteMillis)
			for _, d := range all {
				if d.Time >= lo && d.Time < hi {
					want = append(want, d)
					perMinute[(d.Time-first)/minuteMillis]++
				}
			}
			got, err := db.deliveredIn(ctx, k, time.UnixMilli(lo), time.UnixMilli(hi))
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(got, compareDelivered)
			slices.SortFunc(want, compareDelivered)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: deliveredIn [%d, %d): %d keys, want %d", round, lo-base, hi-base, len(got), len(want))
			}
			counts, err := db.DeliveredCounts(ctx, k, time.UnixMilli(lo), time.UnixMilli(hi))
			if err != nil || !slices.Equal(counts, perMinute) {
				t.Fatalf("round %d: DeliveredCounts [%d, %d): %v (%v), want %v", round, lo-base, hi-base, counts, err, perMinute)
			}
		}
		// Probes of stored keys alone (the latest and earliest of them are
		// stored keys) and with a key past every stored one.
		var probe []cursor.Delivered
		if round%2 == 1 {
			probe = append(probe, cursor.Delivered{Time: base + span + 1, Hash: 1})
		}
		for range 50 {
			if p := key(); round%2 == 1 || len(all) == 0 {
				probe = append(probe, p)
			} else {
				probe = append(probe, all[rng.IntN(len(all))])
			}
		}
		of, err := db.DeliveredOf(ctx, k, probe)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range probe {
			n := 0
			for _, d := range all {
				if d == p {
					n++
				}
			}
			if of[i] != n {
				t.Fatalf("round %d: DeliveredOf(%v) = %d, committed %d times", round, p, of[i], n)
			}
		}
	}
}

// Hour values as version 2 wrote them (no checksum) read beside the
// checked values of this version, and are cut by the horizon alike.
func TestHourValuesWithoutAChecksumReadBesideCheckedOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTemp(t)
	k := record.Stream{Source: "dns", Account: "acme"}
	base := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration, h uint64) cursor.Delivered {
		return cursor.Delivered{Time: base.Add(d).UnixMilli(), Hash: h}
	}
	old := []cursor.Delivered{at(time.Minute, 1), at(59*time.Minute, 2)}
	err := db.update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketDelivered)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists(encodeKey(k))
		if err != nil {
			return err
		}
		start := base.UnixMilli()
		v := []byte{deliveredV2}
		for _, e := range old {
			v = binary.BigEndian.AppendUint32(v, uint32(e.Time-start))
			v = binary.BigEndian.AppendUint64(v, e.Hash)
		}
		seq, _ := b.NextSequence()
		return b.Put(binary.BigEndian.AppendUint64(spanKey(start, hourMillis), seq), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	now := []cursor.Delivered{at(time.Minute, 1), at(2*time.Minute, 3), at(61*time.Minute, 4)}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: base}}}, Delivered: map[record.Stream][]cursor.Delivered{k: now}}); err != nil {
		t.Fatal(err)
	}
	counts, err := db.DeliveredOf(ctx, k, []cursor.Delivered{at(time.Minute, 1), at(59*time.Minute, 2), at(2*time.Minute, 3), at(61*time.Minute, 4), at(3*time.Minute, 5)})
	if err != nil || !slices.Equal(counts, []int{2, 1, 1, 1, 0}) {
		t.Fatalf("DeliveredOf: %v (%v), want [2 1 1 1 0]", counts, err)
	}
	if n := db.DamagedValues(); n != 0 {
		t.Fatalf("%d sound values taken for damaged", n)
	}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: base.Add(time.Hour)}}}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.deliveredIn(ctx, k, base, base.Add(2*time.Hour))
	if err != nil || len(got) != 1 || got[0] != at(61*time.Minute, 4) {
		t.Fatalf("after the cut at 11:00: %v (%v); want the value of 11:00 only", got, err)
	}
}
