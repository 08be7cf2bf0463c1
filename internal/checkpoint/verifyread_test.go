package checkpoint

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// ReadSnapshot reads states and window logs read-only; while a collector
// holds the file (its lock) it reads a copy, and the file is not changed
// either way.
func TestReadSnapshotReadsStatesAndWindowLogsAlsoWhileTheFileIsHeld(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "checkpoint.db")
	db, err := Open(path, WithOpenTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := State{Cursor: cursor.Cursor{Watermark: t0.Add(3 * time.Hour), Density: 7}, Delivered: 42}
	logs := []cursor.LoggedWindow{hourWindow(0, 10), hourWindow(1, 20), hourWindow(2, 30)}
	if err := db.Apply(ctx, Changes{States: map[record.Stream]State{dnsAcme: st}, Windows: map[record.Stream]cursor.WindowChanges{dnsAcme: {Put: logs}}}); err != nil {
		t.Fatal(err)
	}
	check := func(s Snapshot, copied bool) {
		t.Helper()
		got, ok := s.States[dnsAcme]
		if !ok || !got.Watermark.Equal(st.Watermark) || got.Delivered != 42 || len(s.States) != 1 || s.Copied != copied {
			t.Fatalf("snapshot %+v (copied %v); want the state %+v (copied %v)", s.States, s.Copied, st, copied)
		}
		windowsEqual(t, s.Windows[dnsAcme], logs)
	}
	held, err := ReadSnapshot(ctx, path, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	check(held, true)
	// The holder goes on committing after the copy.
	if err := db.Commit(ctx, dnsAcme, State{Cursor: cursor.Cursor{Watermark: t0.Add(4 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	free, err := ReadSnapshot(ctx, path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st.Watermark, st.Delivered = t0.Add(4*time.Hour), 0
	if got := free.States[dnsAcme]; free.Copied || !got.Watermark.Equal(st.Watermark) {
		t.Fatalf("snapshot of the free file: %+v, copied %v", got, free.Copied)
	}
	windowsEqual(t, free.Windows[dnsAcme], logs)

	if _, err := ReadSnapshot(ctx, filepath.Join(t.TempDir(), "none.db"), time.Second); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v; want fs.ErrNotExist", err)
	}
}
