package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

var dnsAcme = record.Stream{Source: "dns", Account: "acme"}

// hourWindow is the log entry of the hour i after t0.
func hourWindow(i int, count int64) cursor.LoggedWindow {
	return cursor.LoggedWindow{Start: t0.Add(time.Duration(i) * time.Hour), End: t0.Add(time.Duration(i+1) * time.Hour),
		Count: count, FetchedAt: t0.Add(time.Duration(i+1)*time.Hour + 30*time.Minute)}
}

func windowsEqual(t testing.TB, got, want []cursor.LoggedWindow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("window log has %d entries, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Start.Equal(w.Start) || !g.End.Equal(w.End) || !g.FetchedAt.Equal(w.FetchedAt) ||
			g.Count != w.Count || g.Digest != w.Digest || g.Passed != w.Passed || !g.Due.Equal(w.Due) {
			t.Fatalf("entry %d = %+v, want %+v", i, g, w)
		}
		if g.Start.Location() != time.UTC || g.End.Location() != time.UTC {
			t.Fatalf("entry %d is not in UTC: %v", i, g.Start)
		}
	}
}

func mustWindows(t testing.TB, d *DB, k record.Stream) []cursor.LoggedWindow {
	t.Helper()
	w, err := d.Windows(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestAWindowLogComesBackSortedByStartWithEveryField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, path := openTemp(t)
	edge := hourWindow(2, 17)
	edge.Digest = "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff"
	edge.Passed = 6*time.Hour + 123*time.Millisecond
	edge.Due = edge.End.Add(24 * time.Hour).In(time.FixedZone("y", -7200)) // stored in UTC
	local := hourWindow(1, 5)
	local.Start, local.End = local.Start.In(time.FixedZone("x", 3600)), local.End.In(time.FixedZone("x", 3600))
	put := []cursor.LoggedWindow{edge, hourWindow(0, 0), local}
	if err := d.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: put}}}); err != nil {
		t.Fatal(err)
	}
	want := []cursor.LoggedWindow{hourWindow(0, 0), hourWindow(1, 5), edge}
	windowsEqual(t, mustWindows(t, d, dnsAcme), want)
	if other := mustWindows(t, d, record.Stream{Source: "dns", Account: "globex"}); len(other) != 0 {
		t.Fatalf("another stream's log: %v", other)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	windowsEqual(t, mustWindows(t, d2, dnsAcme), want)
}

func TestWindowChangesDeleteThenPutThenPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openTemp(t)
	var seed []cursor.LoggedWindow
	for i := range 6 {
		seed = append(seed, hourWindow(i, int64(i)))
	}
	apply := func(c cursor.WindowChanges) {
		t.Helper()
		if err := d.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: c}}); err != nil {
			t.Fatal(err)
		}
	}
	apply(cursor.WindowChanges{Put: seed})
	// A recheck merged hours 2-3 into one entry and advanced hour 4.
	merged := cursor.LoggedWindow{Start: seed[2].Start, End: seed[3].End, Count: 9, FetchedAt: t0.Add(10 * time.Hour), Passed: 6 * time.Hour}
	h4 := seed[4]
	h4.Passed = 5 * time.Hour
	apply(cursor.WindowChanges{Delete: []time.Time{seed[2].Start, seed[3].Start, t0.Add(99 * time.Hour)}, Put: []cursor.LoggedWindow{merged, h4}})
	windowsEqual(t, mustWindows(t, d, dnsAcme), []cursor.LoggedWindow{seed[0], seed[1], merged, h4, seed[5]})
	// The horizon passed the end of hour 1: hours 0 and 1 go, and only
	// they (an entry ending exactly at the cut goes too).
	apply(cursor.WindowChanges{PruneBefore: seed[1].End})
	windowsEqual(t, mustWindows(t, d, dnsAcme), []cursor.LoggedWindow{merged, h4, seed[5]})
	apply(cursor.WindowChanges{PruneBefore: t0.Add(100 * time.Hour)})
	if got := mustWindows(t, d, dnsAcme); len(got) != 0 {
		t.Fatalf("everything pruned, left %v", got)
	}
	// The emptied log's bucket is gone, and a new entry starts it again.
	rawCheck(t, d, func(tx *bolt.Tx) {
		if tx.Bucket(bucketWindows).Bucket(encodeKey(dnsAcme)) != nil {
			t.Fatal("an empty window log keeps its bucket")
		}
	})
	apply(cursor.WindowChanges{Put: []cursor.LoggedWindow{seed[0]}})
	windowsEqual(t, mustWindows(t, d, dnsAcme), []cursor.LoggedWindow{seed[0]})
}

func rawCheck(t *testing.T, d *DB, fn func(tx *bolt.Tx)) {
	t.Helper()
	if err := d.bdb.View(func(tx *bolt.Tx) error { fn(tx); return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestTheWindowLimitDropsTheOldestEntriesAndCountsThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openTemp(t, WithWindowLimit(3))
	for i := range 5 {
		if err := d.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{hourWindow(i, 1)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	windowsEqual(t, mustWindows(t, d, dnsAcme), []cursor.LoggedWindow{hourWindow(2, 1), hourWindow(3, 1), hourWindow(4, 1)})
	// Pruned entries are not counted as dropped.
	if err := d.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{hourWindow(5, 1)}, PruneBefore: hourWindow(3, 0).End}}}); err != nil {
		t.Fatal(err)
	}
	windowsEqual(t, mustWindows(t, d, dnsAcme), []cursor.LoggedWindow{hourWindow(4, 1), hourWindow(5, 1)})
	if w, a := d.Dropped(); w != 2 || a != 0 {
		t.Fatalf("Dropped() = %d, %d; want 2, 0", w, a)
	}
}

// The state and the window log of a stream are committed together: a bad
// window refuses the whole Apply, states included.
func TestAStateAndItsWindowLogAreStoredTogetherOrNotAtAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := openTemp(t)
	bad := []cursor.LoggedWindow{
		{Start: t0, End: t0},
		{Start: t0.Add(time.Hour), End: t0},
		{End: t0},
		{Start: t0, End: t0.Add(time.Hour), Count: -1},
		{Start: t0, End: t0.Add(time.Hour), Passed: -1},
		{Start: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), End: t0},
	}
	for _, w := range bad {
		err := d.Apply(ctx, Changes{
			States:  map[record.Stream]State{dnsAcme: {Cursor: cursor.Cursor{Watermark: t0}}},
			Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{hourWindow(0, 1), w}}},
		})
		if err == nil {
			t.Fatalf("window %+v was accepted", w)
		}
	}
	err := d.Apply(ctx, Changes{
		States:  map[record.Stream]State{dnsAcme: {Cursor: cursor.Cursor{Watermark: t0}}},
		Windows: map[record.Stream]cursor.WindowChanges{{Source: "", Account: "x"}: {Put: []cursor.LoggedWindow{hourWindow(0, 1)}}},
	})
	if !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("a window log of an empty source: %v, want ErrInvalidKey", err)
	}
	if all, _ := d.All(ctx); len(all) != 0 {
		t.Fatalf("a refused Apply stored states %v", all)
	}
	if w := mustWindows(t, d, dnsAcme); len(w) != 0 {
		t.Fatalf("a refused Apply stored windows %v", w)
	}
	// The same with a good window: both are there.
	if err := d.Apply(ctx, Changes{
		States:  map[record.Stream]State{dnsAcme: {Cursor: cursor.Cursor{Watermark: t0.Add(time.Hour)}}},
		Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{hourWindow(0, 1)}}},
	}); err != nil {
		t.Fatal(err)
	}
	if st, ok, _ := d.Load(ctx, dnsAcme); !ok || !st.Watermark.Equal(t0.Add(time.Hour)) {
		t.Fatalf("state %+v %v", st, ok)
	}
	windowsEqual(t, mustWindows(t, d, dnsAcme), []cursor.LoggedWindow{hourWindow(0, 1)})
}

// Merging the changes of several pages and applying them once stores what
// applying them one by one stores (for entries that end after every
// earlier prune, which is every entry the pipeline puts).
func TestMergedWindowChangesEqualTheChangesAppliedInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		one, _ := openTemp(t)
		many, _ := openTemp(t)
		var merged cursor.WindowChanges
		maxPrune := -1
		for range 1 + rng.IntN(8) {
			var c cursor.WindowChanges
			for range rng.IntN(4) {
				c.Delete = append(c.Delete, hourWindow(rng.IntN(12), 0).Start)
			}
			for range rng.IntN(5) {
				i := maxPrune + 1 + rng.IntN(12-maxPrune)
				c.Put = append(c.Put, hourWindow(i, rng.Int64N(1000)))
			}
			if rng.IntN(4) == 0 {
				p := rng.IntN(12)
				c.PruneBefore = t0.Add(time.Duration(p) * time.Hour)
				maxPrune = max(maxPrune, p)
			}
			if err := many.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: c}}); err != nil {
				t.Fatal(err)
			}
			merged.Merge(c)
		}
		if err := one.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: merged}}); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			windowsEqual(t, mustWindows(t, one, dnsAcme), mustWindows(t, many, dnsAcme))
		})
	}
}

func TestResetRemovesTheWindowLogsAndAlertMarksOfItsStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	streams := []record.Stream{dnsAcme, {Source: "dns", Account: "globex"}, {Source: "dnsx", Account: "acme"}}
	d, _ := openTemp(t)
	c := Changes{States: map[record.Stream]State{}, Windows: map[record.Stream]cursor.WindowChanges{}, Alerts: map[record.Stream]cursor.AlertChanges{}}
	for _, k := range streams {
		c.States[k] = State{Cursor: cursor.Cursor{Watermark: t0}}
		c.Windows[k] = cursor.WindowChanges{Put: []cursor.LoggedWindow{hourWindow(0, 1)}}
		c.Alerts[k] = cursor.AlertChanges{Put: map[string]cursor.AlertMark{"a": {Update: t0, Create: t0}}}
	}
	if err := d.Apply(ctx, c); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Reset(ctx, "", "dns", "acme"); n != 1 || err != nil {
		t.Fatalf("Reset = %d, %v", n, err)
	}
	if len(mustWindows(t, d, dnsAcme)) != 0 || len(mustAlerts(t, d, dnsAcme)) != 0 {
		t.Fatal("the reset stream kept its logs")
	}
	if len(mustWindows(t, d, streams[1])) != 1 || len(mustAlerts(t, d, streams[1])) != 1 {
		t.Fatal("another account lost its logs")
	}
	if n, err := d.Reset(ctx, "", "dns", ""); n != 1 || err != nil {
		t.Fatalf("Reset = %d, %v", n, err)
	}
	if len(mustWindows(t, d, streams[1])) != 0 || len(mustAlerts(t, d, streams[1])) != 0 {
		t.Fatal("a reset of the source kept an account's logs")
	}
	if len(mustWindows(t, d, streams[2])) != 1 || len(mustAlerts(t, d, streams[2])) != 1 {
		t.Fatal("a source sharing the prefix lost its logs")
	}
}

// A window log entry that cannot be read stops Open with an error naming
// the stream, never a silent loss of the log.
func TestADamagedWindowLogEntryIsAnErrorAtOpen(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		key   []byte
		value string
		want  error
	}{
		{"not JSON", pinnedTimeKey(t0), "{", ErrCorrupt},
		{"no version", pinnedTimeKey(t0), `{"start":"2026-11-20T00:00:00Z"}`, ErrCorrupt},
		{"a newer version", pinnedTimeKey(t0), `{"v":4}`, ErrUnknownVersion},
		{"a version 2 value with a due time", pinnedTimeKey(t0), `{"v":2,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T01:00:00Z","count":1,"fetched_at":"2026-11-20T01:00:00Z","passed_ns":1,"due":"2026-11-20T02:00:00Z"}`, ErrCorrupt},
		{"a due time at the end", pinnedTimeKey(t0), `{"v":3,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T01:00:00Z","count":1,"fetched_at":"2026-11-20T01:00:00Z","passed_ns":1,"due":"2026-11-20T01:00:00Z"}`, ErrCorrupt},
		{"a version 2 value with a stage", pinnedTimeKey(t0), `{"v":2,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T01:00:00Z","count":1,"fetched_at":"2026-11-20T01:00:00Z","stage":1}`, ErrCorrupt},
		{"a version 1 value with passed_ns", pinnedTimeKey(t0), `{"v":1,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T01:00:00Z","count":1,"fetched_at":"2026-11-20T01:00:00Z","passed_ns":1}`, ErrCorrupt},
		{"a negative passed", pinnedTimeKey(t0), `{"v":2,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T01:00:00Z","count":1,"fetched_at":"2026-11-20T01:00:00Z","passed_ns":-1}`, ErrCorrupt},
		{"a negative stage", pinnedTimeKey(t0), `{"v":1,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T01:00:00Z","count":1,"fetched_at":"2026-11-20T01:00:00Z","stage":-1}`, ErrCorrupt},
		{"an unknown field", pinnedTimeKey(t0), `{"v":1,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T01:00:00Z","count":1,"fetched_at":"2026-11-20T01:00:00Z","stage":0,"x":1}`, ErrCorrupt},
		{"a start unlike its key", pinnedTimeKey(t0.Add(time.Hour)), `{"v":1,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T01:00:00Z","count":1,"fetched_at":"2026-11-20T01:00:00Z","stage":0}`, ErrCorrupt},
		{"an empty window", pinnedTimeKey(t0), `{"v":1,"start":"2026-11-20T00:00:00Z","end":"2026-11-20T00:00:00Z","count":1,"fetched_at":"2026-11-20T01:00:00Z","stage":0}`, ErrCorrupt},
		{"a short key", []byte("abc"), `{"v":1}`, ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, path := openTemp(t)
			if err := d.Apply(context.Background(), Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{hourWindow(5, 1)}}}}); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			rawBolt(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketWindows).Bucket(encodeKey(dnsAcme))
				if err := b.Put(tc.key, []byte(tc.value)); err != nil {
					return err
				}
				return b.SetSequence(b.Sequence() + 1)
			})
			_, err := Open(path)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
			if want := "windows of dns/acme"; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v does not name %q", err, want)
			}
		})
	}
}

func TestChangesMergeFoldsStatesLogsAndMarks(t *testing.T) {
	t.Parallel()
	var c Changes
	if !c.Empty() {
		t.Fatal("the zero Changes is not empty")
	}
	c.Merge(Changes{
		States:  map[record.Stream]State{dnsAcme: {Delivered: 1}},
		Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{hourWindow(0, 1)}}},
		Alerts:  map[record.Stream]cursor.AlertChanges{alertsAcme: {Put: map[string]cursor.AlertMark{"a": {Update: ms(1)}}}},
	})
	c.Merge(Changes{
		States:  map[record.Stream]State{dnsAcme: {Delivered: 2}},
		Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Delete: []time.Time{hourWindow(0, 1).Start}, Put: []cursor.LoggedWindow{hourWindow(1, 1)}}},
		Alerts:  map[record.Stream]cursor.AlertChanges{alertsAcme: {Put: map[string]cursor.AlertMark{"a": {Update: ms(2)}}}},
	})
	if c.Empty() || c.States[dnsAcme].Delivered != 2 || len(c.Windows[dnsAcme].Put) != 1 || !c.Windows[dnsAcme].Put[0].Start.Equal(hourWindow(1, 1).Start) ||
		!c.Alerts[alertsAcme].Put["a"].Update.Equal(ms(2)) {
		t.Fatalf("merged %+v", c)
	}
	if !(Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {}}}).Empty() {
		t.Fatal("changes of nothing are not empty")
	}
	d, _ := openTemp(t)
	if err := d.Apply(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	windowsEqual(t, mustWindows(t, d, dnsAcme), []cursor.LoggedWindow{hourWindow(1, 1)})
}
