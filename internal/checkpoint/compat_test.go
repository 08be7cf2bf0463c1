package checkpoint

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/window"
)

// compatFile was written by the collector at commit 2968b7c, when streams
// were keyed by checkpoint.Key (a throwaway program: Open with the clock
// at t0, CommitMany(compatStates()), Close). The key type has become
// record.Stream since; the file format must not have changed with it.
const compatFile = "testdata/v1-2968b7c.db"

// compatStates are the states compatFile holds.
func compatStates() map[record.Stream]State {
	return map[record.Stream]State{
		{Source: "dns", Account: "acme"}: {Cursor: cursor.Cursor{Watermark: t0.Add(-48 * time.Hour), Density: 1234.5, InFlight: &cursor.Chain{Window: window.Window{Start: t0.Add(-48 * time.Hour), End: t0.Add(-24 * time.Hour)}, NextURL: "https://api.example/api/v2/pages/AQIE?x=1&y=%2F",
			Started: t0.Add(-2 * time.Hour), Pages: 7, Rows: 35000}}, Delivered: 123456, Updated: t0.Add(-time.Minute)},
		{Source: "dns", Account: "acme-dev"}:           {Cursor: cursor.Cursor{Watermark: t0.Add(-30 * time.Minute)}, Delivered: 9, Updated: t0},
		{Source: "audit_logs", Account: "org"}:         {Cursor: cursor.Cursor{Watermark: t0.Add(-time.Hour), Density: 0.25}, Delivered: 1, Updated: t0},
		{Source: "changed_files", Account: "default"}:  {Cursor: cursor.Cursor{Watermark: t0.Add(-72 * time.Hour)}, Updated: t0},
		{Source: "edge_alerts", Account: "Ünïcode/ac"}: {Cursor: cursor.Cursor{Watermark: t0.Add(-5 * time.Hour)}, Delivered: 42, Updated: t0},
		{Source: "connections", Account: ""}:           {Cursor: cursor.Cursor{Watermark: t0.Add(-6 * time.Hour)}, Updated: t0},
	}
}

// copyFile copies src into dir and returns the copy's path: Open may
// narrow a file's mode and takes its lock, which a testdata file must not
// see.
func copyFile(t *testing.T, src, dir string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(dir, filepath.Base(src))
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// rawStates returns the states bucket of the bbolt file at path, byte for
// byte.
func rawStates(t *testing.T, path string) map[string]string {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	out := map[string]string{}
	err = bdb.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketStates).ForEach(func(k, v []byte) error {
			out[string(k)] = string(bytes.Clone(v))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestACheckpointWrittenBeforeStreamsWereRecordStreamsLoadsTheSame(t *testing.T) {
	t.Parallel()
	path := copyFile(t, compatFile, t.TempDir())
	d, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", compatFile, err)
	}
	defer d.Close()
	if r := d.Recovered(); r != "" {
		t.Fatalf("a sound file reported as recovered: %s", r)
	}
	got, err := d.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := compatStates()
	if len(got) != len(want) {
		t.Fatalf("%d states, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("stream %q missing; have %v", k, got)
		}
		statesEqual(t, g, w)
		one, ok, err := d.Load(context.Background(), k)
		if err != nil || !ok {
			t.Fatalf("Load(%q) = %v, %v", k, ok, err)
		}
		statesEqual(t, one, w)
	}
}

// Versions 2 and 3 of a state value only add fields (the limits learnt,
// the start; the inventory snapshot): a state that knows none of them is
// stored as version 1 stored it, but for its version, and the keys are
// unchanged.
func TestTheEncodingOfKeysAndStatesIsTheOldFilesButForTheVersion(t *testing.T) {
	t.Parallel()
	old := rawStates(t, copyFile(t, compatFile, t.TempDir()))
	d, path := openTemp(t, WithClock(func() time.Time { return t0 }))
	if err := d.CommitMany(context.Background(), compatStates()); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	now := rawStates(t, path)
	if len(now) != len(old) {
		t.Fatalf("%d stored keys, the old file has %d", len(now), len(old))
	}
	for k, v := range old {
		if v = strings.Replace(v, `{"v":1,`, `{"v":3,`, 1); now[k] != v {
			t.Errorf("key %q:\n now %s\n was %s", k, now[k], v)
		}
	}
}

// The window log and the alert marks came after compatFile was written,
// in buckets of their own: the old file opens unchanged, reads as empty
// logs, takes new entries next to its states, and its states stay as they
// were, byte for byte.
func TestACheckpointWrittenBeforeTheWindowLogAndAlertMarksOpensAndGrowsThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := copyFile(t, compatFile, t.TempDir())
	rawCheckFile(t, path, func(tx *bolt.Tx) {
		if tx.Bucket(bucketWindows) != nil || tx.Bucket(bucketAlerts) != nil {
			t.Fatal("the old file already has the new buckets: it is not the old file")
		}
	})
	before := rawStates(t, path)
	d, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", compatFile, err)
	}
	for k := range compatStates() {
		if w := mustWindows(t, d, k); len(w) != 0 {
			t.Fatalf("%s: window log %v in an old file", k, w)
		}
		if a := mustAlerts(t, d, k); len(a) != 0 {
			t.Fatalf("%s: alert marks %v in an old file", k, a)
		}
	}
	k := record.Stream{Source: "edge_alerts", Account: "Ünïcode/ac"}
	if err := d.Apply(ctx, Changes{
		Windows: map[record.Stream]cursor.WindowChanges{k: {Put: []cursor.LoggedWindow{hourWindow(0, 3)}}},
		Alerts:  map[record.Stream]cursor.AlertChanges{k: {Put: map[string]cursor.AlertMark{"u-1": {Update: ms(2), Create: ms(1)}}}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	after := rawStates(t, path)
	if len(after) != len(before) {
		t.Fatalf("%d states after, %d before", len(after), len(before))
	}
	for key, v := range before {
		if after[key] != v {
			t.Fatalf("state %q changed:\n now %s\n was %s", key, after[key], v)
		}
	}
	d, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	windowsEqual(t, mustWindows(t, d, k), []cursor.LoggedWindow{hourWindow(0, 3)})
	alertsEqual(t, mustAlerts(t, d, k), map[string]cursor.AlertMark{"u-1": {Update: ms(2), Create: ms(1)}})
	got, err := d.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for key, w := range compatStates() {
		statesEqual(t, got[key], w)
	}
}

func rawCheckFile(t *testing.T, path string, fn func(tx *bolt.Tx)) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := bdb.View(func(tx *bolt.Tx) error { fn(tx); return nil }); err != nil {
		t.Fatal(err)
	}
}

// windowsV1File was written by the collector at commit cd5d7e3, whose
// window log stored "stage", an index into the recheck points of the
// time (a throwaway program: Open with the clock at t0, one Apply, Close).
// Its dns/acme log holds windows of 5 minutes from t0, fetched 30 s after
// their end, at stages 0 to 4 of the learnt points [12m 24m 1h 6h 24h],
// and a sixth refetched 1h5m after its end at stage 3; its
// edge_audit_events/acme log one edge window at stage 1.
const windowsV1File = "testdata/windows-v1-cd5d7e3.db"

// Issue 29 item 3: an index into points recomputed at every step could
// skip points, so the log now keeps how long after its end a window was
// last asked (cursor.LoggedWindow.Passed). A log of the old form reads
// with Passed at most the time its window was truly last asked: the next
// point, the first of any schedule after Passed, is then never later than
// the one the window truly had to come, so no point is dropped whatever
// the schedule was and is (at worst a passed point comes once more). The
// time the old form proves is when the window was fetched: FetchedAt,
// exact for a window refetched at its last point. An entry written back
// takes the new form; entries not written stay as they were and read the
// same.
func TestAWindowLogOfStageIndexesReadsWithEveryRemainingPoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := copyFile(t, windowsV1File, t.TempDir())
	learnt := []time.Duration{12 * time.Minute, 24 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour}
	v1 := rawWindowValues(t, path, dnsAcme)
	if len(v1) != 6 || !strings.Contains(v1[3], `"v":1,`) || !strings.Contains(v1[3], `"stage":3`) {
		t.Fatalf("the file is not of the old form: %v", v1)
	}
	d, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", windowsV1File, err)
	}
	defer d.Close()
	got := mustWindows(t, d, dnsAcme)
	if len(got) != 6 {
		t.Fatalf("dns/acme: %d windows, want 6: %v", len(got), got)
	}
	m := 5 * time.Minute
	for i, w := range got {
		stage := []int{0, 1, 2, 3, 4, 3}[i]
		// When the window was truly last asked: at its fetch, or at the
		// point of its stage.
		truly := w.FetchedAt.Sub(w.End)
		if stage > 0 {
			truly = max(truly, learnt[stage-1])
		}
		if !w.Start.Equal(t0.Add(time.Duration(i)*m)) || !w.End.Equal(w.Start.Add(m)) || w.Count != int64(10+i) {
			t.Fatalf("window %d: %+v", i, w)
		}
		if w.Passed < 0 || w.Passed > truly {
			t.Errorf("window %d (stage %d): passed %v, later than its last ask %v: a point still to come could be skipped", i, stage, w.Passed, truly)
		}
		if want := w.FetchedAt.Sub(w.End); w.Passed != want {
			t.Errorf("window %d: passed %v, want its fetch %v", i, w.Passed, want)
		}
	}
	if got[5].Passed != time.Hour+5*time.Minute {
		t.Errorf("the window refetched 1h5m after its end: passed %v", got[5].Passed)
	}
	edge := mustWindows(t, d, record.Stream{Source: "edge_audit_events", Account: "acme"})
	if len(edge) != 1 || edge[0].Digest == "" || edge[0].Passed != 30*time.Second {
		t.Fatalf("edge log: %+v", edge)
	}
	// A recheck stores window 3 anew: it is written in the new form, the
	// others stay as they were and read the same.
	w3 := got[3]
	w3.Passed = 6*time.Hour + time.Second
	if err := d.Apply(ctx, Changes{Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: []cursor.LoggedWindow{w3}}}}); err != nil {
		t.Fatal(err)
	}
	again := mustWindows(t, d, dnsAcme)
	want := slices.Clone(got)
	want[3] = w3
	windowsEqual(t, again, want)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	v2 := rawWindowValues(t, path, dnsAcme)
	if !strings.Contains(v2[3], `"v":3,`) || !strings.Contains(v2[3], `"passed_ns":21601000000000`) || strings.Contains(v2[3], "stage") {
		t.Errorf("the entry written back: %s", v2[3])
	}
	if v2[2] != v1[2] {
		t.Errorf("an entry not written changed: %s, was %s", v2[2], v1[2])
	}
}

// rawWindowValues returns the values of k's window log in the bbolt file
// at path, by start.
func rawWindowValues(t *testing.T, path string, k record.Stream) []string {
	t.Helper()
	var out []string
	rawCheckFile(t, path, func(tx *bolt.Tx) {
		b := tx.Bucket(bucketWindows).Bucket(encodeKey(k))
		if b == nil {
			t.Fatalf("no window log of %s", k)
		}
		if err := b.ForEach(func(_, v []byte) error { out = append(out, string(v)); return nil }); err != nil {
			t.Fatal(err)
		}
	})
	return out
}
