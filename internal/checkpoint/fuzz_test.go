package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// FuzzOpen writes arbitrary bytes as a checkpoint file and opens it: Open
// never panics or crashes, and either returns a usable DB (it reads every
// state and commits) or an error wrapping ErrCorrupt, ErrNotCheckpoint or
// ErrUnknownVersion. Seeds: a real checkpoint and damaged copies of it.
func FuzzOpen(f *testing.F) {
	// A small checkpoint (four pages, one state) mutates fast; the larger
	// one has branch pages and overflow.
	small := filepath.Join(f.TempDir(), "small.db")
	d, err := Open(small)
	if err != nil {
		f.Fatal(err)
	}
	if err := d.Commit(context.Background(), record.Stream{Source: "dns", Account: "acme"}, sampleState()); err != nil {
		f.Fatal(err)
	}
	if err := d.Close(); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(small)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)

	h := makeCheckpoint(f)
	ps := h.pageSize
	f.Add(h.file)
	for _, n := range []int{0, 1, 100, 4095, 4096, 8192, 12288, 36864, len(h.file) / 2, len(h.file) - 1} {
		f.Add(h.file[:min(n, len(h.file))])
	}
	for _, damage := range []func(b []byte){
		func(b []byte) { clear(b[:ps]) },
		func(b []byte) { clear(b[ps : 2*ps]) },
		func(b []byte) { b[pageHeaderSize+40] ^= 1 },
		func(b []byte) { b[8] ^= 1 },
		func(b []byte) { clear(b[:2*ps]) },
		func(b []byte) { b[3*ps+20] ^= 0xff },
	} {
		b := bytes.Clone(h.file)
		damage(b)
		f.Add(b)
	}
	f.Add([]byte("checkpoint:\n  path: /var/lib/collector/checkpoint.db\n"))

	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "cp.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := Open(path, WithOpenTimeout(100*time.Millisecond), WithClock(func() time.Time { return t0 }))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotCheckpoint) && !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("Open = %v, want ErrCorrupt, ErrNotCheckpoint or ErrUnknownVersion", err)
			}
			if errors.Is(err, ErrNotCheckpoint) && errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v: both ErrNotCheckpoint and ErrCorrupt", err)
			}
		} else {
			ctx := context.Background()
			if _, err := d.All(ctx); err != nil {
				t.Fatalf("All on a file Open accepted: %v", err)
			}
			if err := d.Commit(ctx, record.Stream{Source: "dns", Account: "fuzz"}, State{Cursor: cursor.Cursor{Watermark: t0}, Updated: t0}); err != nil {
				t.Fatalf("Commit on a file Open accepted: %v", err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range dirNames(t, dir) {
			if strings.HasPrefix(name, ".") {
				t.Fatalf("Open left %s behind", name)
			}
		}
	})
}
