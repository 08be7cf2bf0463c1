package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/checkpoint/boltfile"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Snapshot is what `collector verify` reads of a checkpoint file: every
// stream's committed state and window log.
type Snapshot struct {
	States  map[record.Stream]State
	Windows map[record.Stream][]cursor.LoggedWindow
	// Copied is set when a running collector held the file and the
	// snapshot was read from a copy of it.
	Copied bool
}

// snapshotCopies is how often ReadSnapshot copies a file a running
// collector holds when a commit tore the previous copy.
const snapshotCopies = 3

// ReadSnapshot reads the checkpoint file at path without writing to it and
// without taking the writer's lock: it opens the file read-only under
// bbolt's shared lock, waiting up to timeout. When a running collector
// holds the file (ErrLocked), it reads a copy instead: the file is copied
// into a private temporary directory, the copy checked as Open checks a
// file (bbolt's consistency check, every value) and read; a copy that a
// commit tore in the middle is taken again, up to three times. A missing
// file is an error wrapping fs.ErrNotExist.
func ReadSnapshot(ctx context.Context, path string, timeout time.Duration) (Snapshot, error) {
	if _, err := os.Stat(path); err != nil {
		return Snapshot{}, fmt.Errorf("checkpoint file %s: %w", path, err)
	}
	s, err := readSnapshot(path, path, timeout)
	if !errors.Is(err, ErrLocked) {
		return s, err
	}
	var last error
	for range snapshotCopies {
		if err := ctx.Err(); err != nil {
			return Snapshot{}, err
		}
		s, last = readCopy(path, timeout)
		if last == nil {
			s.Copied = true
			return s, nil
		}
	}
	return Snapshot{}, fmt.Errorf("checkpoint file %s is held by a running collector and %d copies of it were torn by its commits: %w", path, snapshotCopies, last)
}

// readCopy copies path to a private temporary file, checks the copy and
// reads it.
func readCopy(path string, timeout time.Duration) (Snapshot, error) {
	dir, err := os.MkdirTemp("", "collector-verify-*")
	if err != nil {
		return Snapshot{}, fmt.Errorf("copy checkpoint file %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	cp := filepath.Join(dir, "checkpoint.db")
	if err := copySnapshotFile(path, cp); err != nil {
		return Snapshot{}, fmt.Errorf("copy checkpoint file %s: %w", path, err)
	}
	dmg, err := boltfile.Verify(cp, path+" (copy)", timeout, checkContents)
	if err != nil {
		return Snapshot{}, err
	}
	if dmg != nil {
		return Snapshot{}, fmt.Errorf("checkpoint file %s (copy): %v: %w", path, dmg.Reasons(), ErrCorrupt)
	}
	return readSnapshot(cp, path+" (copy)", timeout)
}

func copySnapshotFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, boltfile.FileMode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// readSnapshot opens path read-only (name in messages) and reads every
// state and the window log of every stream that has a state.
func readSnapshot(path, name string, timeout time.Duration) (Snapshot, error) {
	var bdb *bolt.DB
	if err := boltfile.Guard(name, func() (err error) {
		bdb, err = boltfile.Open(path, name, timeout, true)
		return err
	}); err != nil {
		return Snapshot{}, withHint(err)
	}
	defer bdb.Close()
	d := &DB{path: name, bdb: bdb}
	states, err := d.all()
	if err != nil {
		return Snapshot{}, err
	}
	windows := make(map[record.Stream][]cursor.LoggedWindow, len(states))
	err = d.view(func(tx *bolt.Tx) error {
		for k := range states {
			ws, err := readWindows(tx, encodeKey(k))
			if err != nil {
				return fmt.Errorf("window log of %s: %w", k, err)
			}
			windows[k] = ws
		}
		return nil
	})
	if err != nil {
		return Snapshot{}, fmt.Errorf("checkpoint file %s: %w", name, err)
	}
	return Snapshot{States: states, Windows: windows}, nil
}
