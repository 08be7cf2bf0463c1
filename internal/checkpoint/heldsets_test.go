package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// heldFile was written by the collector at commit 1d8f842, before the
// held sets (a throwaway program: Open with the clock at t0, one Apply,
// Close): dns/acme with its watermark 2 h before t0 and 30 records of the
// half hour after it in its delivered set, audit_logs/org, the marks of the sinks "siem" and
// "archive", and their skip sets as that collector's pipeline stored them
// beside the marks: JSON under "siem\x00skip" (held-a, held-b, held-c of
// dns/acme and held-org of audit_logs/org) and "archive\x00skip" ([]).
const heldFile = "testdata/held-v1-1d8f842.db"

// hashes returns the id hashes of the keys of ks, counted.
func hashes(ks []cursor.Delivered) map[uint64]int {
	out := map[uint64]int{}
	for _, k := range ks {
		out[k.Hash]++
	}
	return out
}

// wantHeld holds the id hashes held[name][k] should count: each id once.
func wantHeld(t *testing.T, held map[string]map[record.Stream][]cursor.Delivered, name string, k record.Stream, ids ...string) {
	t.Helper()
	got := hashes(held[name][k])
	want := map[uint64]int{}
	for _, id := range ids {
		want[cursor.DeliveredOf(id, t0).Hash]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("held set of sink %s, %s: %v, want the hashes of %v", name, k, got, ids)
	}
}

// legacyKeys returns the keys of the marks bucket that end in "\x00skip".
func legacyKeys(t *testing.T, d *DB) []string {
	t.Helper()
	var out []string
	err := d.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMarks).ForEach(func(k, _ []byte) error {
			if strings.HasSuffix(string(k), legacyHeldSuffix) {
				out = append(out, string(k))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A checkpoint of the collector before the held sets (issue 30) opens:
// the marks read as they were, without the skip sets beside them; Held
// answers the skip sets in the held sets' form; the first commit converts
// them to the held sets and removes them, losing no entry, and the
// stream's horizon cuts them afterwards as it cuts its delivered set.
func TestASkipSetBesideTheMarksOfAnEarlierCollectorIsConvertedAtTheFirstCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := copyFile(t, heldFile, t.TempDir())
	acme, org := record.Stream{Source: "dns", Account: "acme"}, record.Stream{Source: "audit_logs", Account: "org"}
	now := t0.Add(time.Minute)
	d, err := Open(path, WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatalf("Open(%s): %v", heldFile, err)
	}
	defer d.Close()
	marks, err := d.Marks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 2 || !strings.HasPrefix(string(marks["siem"]), `{"v":2`) || string(marks["archive"]) != `{"v":1,"streams":{}}` {
		t.Fatalf("marks %q, want those of siem and archive only", marks)
	}
	check := func(when string) {
		t.Helper()
		held, err := d.Held(ctx)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		wantHeld(t, held, "siem", acme, "held-a", "held-b", "held-c")
		wantHeld(t, held, "siem", org, "held-org")
		if len(held["archive"]) != 0 {
			t.Errorf("%s: archive holds %v, want nothing", when, held["archive"])
		}
		dl, err := d.deliveredIn(ctx, acme, t0.Add(-4*time.Hour), t0)
		if err != nil || len(dl) != 30 {
			t.Errorf("%s: delivered set of %s: %d records, %v; want the 30 committed", when, acme, len(dl), err)
		}
	}
	check("before the first commit")
	if err := d.Apply(ctx, Changes{Marks: map[string][]byte{"siem": []byte(`{"v":2}`)}}); err != nil {
		t.Fatal(err)
	}
	if got := legacyKeys(t, d); len(got) != 0 {
		t.Fatalf("the first commit left the skip sets beside the marks: %q", got)
	}
	check("after the first commit")
	if marks, err := d.Marks(ctx); err != nil || string(marks["siem"]) != `{"v":2}` || len(marks) != 2 {
		t.Fatalf("marks after the first commit: %q, %v", marks, err)
	}

	// The entries sit at the hour of the conversion: a horizon before it
	// keeps them; one past it (the stream can no longer ask that period)
	// cuts them, and only that stream's.
	commit := func(k record.Stream, wm time.Time) {
		t.Helper()
		if err := d.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: wm}}}}); err != nil {
			t.Fatal(err)
		}
	}
	commit(acme, t0)
	held, err := d.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantHeld(t, held, "siem", acme, "held-a", "held-b", "held-c")
	commit(acme, t0.Add(2*time.Hour))
	if held, err = d.Held(ctx); err != nil {
		t.Fatal(err)
	}
	wantHeld(t, held, "siem", acme)
	wantHeld(t, held, "siem", org, "held-org")
}

// A sink's held set is stored as a delivered set is (the same values,
// one entry a copy), per sink and stream; a commit of the stream's state
// cuts it at the same cutoff as the stream's delivered set, and a reset
// of the stream removes it.
func TestAHeldSetIsStoredAndCutAsTheDeliveredSetIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openTest(t)
	acme, beta := record.Stream{Source: "dns", Account: "acme"}, record.Stream{Source: "dns", Account: "beta"}
	at := func(id string, h time.Duration) cursor.Delivered { return cursor.DeliveredOf(id, t0.Add(h)) }
	keys := []cursor.Delivered{at("x", 0), at("y", 90*time.Minute), at("y", 90*time.Minute), at("z", 3*time.Hour)}
	err := d.Apply(ctx, Changes{
		Held:      map[string]map[record.Stream][]cursor.Delivered{"siem": {acme: keys, beta: {at("b", 0)}}, "lake": {acme: {at("x", 0)}}},
		Delivered: map[record.Stream][]cursor.Delivered{acme: keys},
	})
	if err != nil {
		t.Fatal(err)
	}
	held, err := d.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := held["siem"][acme]; fmt.Sprint(got) != fmt.Sprint(keys) {
		t.Fatalf("held set of siem, %s: %v, want %v (each copy)", acme, got, keys)
	}
	// A horizon at t0 + 2 h cuts the spans that end by then: x's and y's.
	if err := d.Apply(ctx, Changes{States: map[record.Stream]State{acme: {Cursor: cursor.Cursor{Watermark: t0.Add(2 * time.Hour)}}}}); err != nil {
		t.Fatal(err)
	}
	if held, err = d.Held(ctx); err != nil {
		t.Fatal(err)
	}
	dl, err := d.deliveredIn(ctx, acme, t0.Add(-time.Hour), t0.Add(5*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []cursor.Delivered{at("z", 3*time.Hour)}
	if fmt.Sprint(held["siem"][acme]) != fmt.Sprint(want) || fmt.Sprint(dl) != fmt.Sprint(want) {
		t.Fatalf("after the cut: held %v, delivered %v; want both %v", held["siem"][acme], dl, want)
	}
	if len(held["lake"]) != 0 || len(held["siem"][beta]) != 1 {
		t.Fatalf("after the cut of %s: lake holds %v (want nothing), siem holds %v of %s (want its one)", acme, held["lake"], held["siem"][beta], beta)
	}
	if _, err := d.Reset(ctx, "", "dns", ""); err != nil {
		t.Fatal(err)
	}
	if held, err = d.Held(ctx); err != nil || len(held["siem"]) != 0 {
		t.Fatalf("after a reset of dns: %v, %v; want nothing held", held, err)
	}
}

// The held set of a stream that tracks alerts (edge alerts) lasts as long
// as its alerts are asked again: a re-ask emits again, by creation time,
// alerts created back to where the marks are pruned (C6), long before the
// delivered cutoff, and an alert a dead run stored past the checkpoint has
// no mark, so only the held set keeps it from the sink (C7). A commit of
// the stream cuts its held set at the alert prune it carries, its
// delivered set at the watermark; a commit without a prune cuts no held
// entry. (The crash-loop duplicates of the transactional Kafka test: a
// commit of the stream after the recovery cut the held alerts at the
// stream's start, and the next run's re-ask wrote them again.)
func TestAHeldSetOfAnAlertStreamIsCutWhereItsAlertsAreNoLongerAskedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openTest(t)
	k := record.Stream{Source: "edge_alerts", Account: "edge"}
	at := func(id string, h time.Duration) cursor.Delivered { return cursor.DeliveredOf(id, t0.Add(h)) }
	// A dead run stored alerts created 30 h, 20 h and 1 h before t0 (its
	// lookback's re-ask) past the checkpoint.
	gone, lookback, fresh := at("created-30h", -30*time.Hour), at("created-20h", -20*time.Hour), at("created-1h", -time.Hour)
	err := d.Apply(ctx, Changes{Held: map[string]map[record.Stream][]cursor.Delivered{"kafka": {k: {gone, lookback, fresh}}}})
	if err != nil {
		t.Fatal(err)
	}
	// The run that recovered commits a page of the stream before its
	// re-ask: watermark t0, alert marks pruned before t0 - 24 h.
	page := Changes{
		States:    map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: t0}}},
		Delivered: map[record.Stream][]cursor.Delivered{k: {fresh}},
		Alerts: map[record.Stream]cursor.AlertChanges{k: {
			Put:                map[string]cursor.AlertMark{"u-fresh": {Update: t0.Add(-time.Hour), Create: t0.Add(-time.Hour)}},
			PruneCreatedBefore: t0.Add(-24 * time.Hour),
		}},
	}
	if err := d.Apply(ctx, page); err != nil {
		t.Fatal(err)
	}
	held, err := d.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []cursor.Delivered{lookback, fresh}
	if fmt.Sprint(held["kafka"][k]) != fmt.Sprint(want) {
		t.Fatalf("held after a commit with the alert prune at t0-24h: %v, want %v (cut at the prune, not at the watermark)", held["kafka"][k], want)
	}
	if dl, err := d.deliveredIn(ctx, k, t0.Add(-48*time.Hour), t0.Add(time.Hour)); err != nil || len(dl) != 0 {
		t.Fatalf("delivered set after the commit: %v, %v; want it cut at the watermark", dl, err)
	}
	// A later page without alert changes cuts no held entry.
	if err := d.Apply(ctx, Changes{States: map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: t0.Add(time.Hour)}}}}); err != nil {
		t.Fatal(err)
	}
	if held, err = d.Held(ctx); err != nil || fmt.Sprint(held["kafka"][k]) != fmt.Sprint(want) {
		t.Fatalf("held after a commit without an alert prune: %v, %v; want %v", held["kafka"][k], err, want)
	}
	// The prune moves past an entry's creation: it goes.
	page.Alerts[k] = cursor.AlertChanges{PruneCreatedBefore: t0.Add(-10 * time.Hour)}
	page.Delivered = nil
	if err := d.Apply(ctx, page); err != nil {
		t.Fatal(err)
	}
	if held, err = d.Held(ctx); err != nil || fmt.Sprint(held["kafka"][k]) != fmt.Sprint([]cursor.Delivered{fresh}) {
		t.Fatalf("held after the prune moved to t0-10h: %v, %v; want %v", held["kafka"][k], err, []cursor.Delivered{fresh})
	}
}

// openTest opens a new checkpoint file, closed when t ends.
func openTest(t *testing.T) *DB {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "cp.db"), WithClock(func() time.Time { return t0 }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
