package checkpoint

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
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

// Version 2 of a state value only adds fields (the limits learnt, the
// start): a state that knows neither is stored as version 1 stored it, but
// for its version, and the keys are unchanged.
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
		if v = strings.Replace(v, `{"v":1,`, `{"v":2,`, 1); now[k] != v {
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
