package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/checkpoint/boltfile"
)

// Inspection is what Inspect found at a checkpoint path. The zero value
// describes a path with no file yet.
type Inspection struct {
	// Path is the path inspected, cleaned.
	Path string
	// Exists is false when there is no file yet: Open creates it.
	Exists bool
	// Streams counts the streams with a stored state.
	Streams int
	// Busy is set when a running collector holds the file: a copy of it
	// was checked.
	Busy bool
	// Damage says what Open will recover from (a damaged meta page), ""
	// when the file is sound.
	Damage string
	// DamagedValues counts the values of the delivered sets and the sinks'
	// held sets that fail their checksum: run reads them as empty, so
	// their records count as not delivered (delivered again if their
	// period is asked again) or not held (that sink may get them again).
	DamagedValues int
}

// String describes the inspection in a few words, for `collector check`.
func (i Inspection) String() string {
	if !i.Exists {
		return "no file yet: run creates it"
	}
	s := fmt.Sprintf("%d streams stored", i.Streams)
	if i.Busy {
		s += "; in use by a running collector (a copy was checked)"
	}
	if i.Damage != "" {
		s += "; damaged, run recovers it: " + i.Damage
	}
	if i.DamagedValues > 0 {
		s += fmt.Sprintf("; %d damaged values in the delivered or held sets: their records count as not delivered (delivered again if asked again)", i.DamagedValues)
	}
	return s
}

// Inspect checks the checkpoint file at path as Open checks it, and returns
// the error Open would return for it (the same checks, the same messages),
// without creating, repairing or writing anything and without holding a
// lock that would stop a collector: a path that is not a checkpoint
// (ErrNotCheckpoint), a damaged file (ErrCorrupt), a file of an unknown
// version (ErrUnknownVersion), a file that cannot be opened for writing,
// and a missing file where Open could not create one (its directory not
// writable, or below a file).
//
// It reads the file under bbolt's shared lock, waiting up to timeout
// (DefaultOpenTimeout when not positive, as Open). When
// a running collector holds the file (its exclusive lock), it checks a copy
// instead, as ReadSnapshot does, and sets Busy: a second collector would
// fail with ErrLocked, but the configuration is right.
func Inspect(path string, timeout time.Duration) (Inspection, error) {
	if path == "" {
		return Inspection{}, errors.New("open checkpoint: empty path")
	}
	if timeout <= 0 {
		timeout = DefaultOpenTimeout
	}
	path = filepath.Clean(path)
	in := Inspection{Path: path}
	switch _, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		// Open makes the directory, then the file (or says why not).
		return in, boltfile.CanCreate(path)
	case err != nil:
		return in, fmt.Errorf("open checkpoint file %s: %w", path, err)
	}
	in.Exists = true
	count := func(db *bolt.DB, name string) error {
		if err := checkContents(db, name); err != nil {
			return err
		}
		d := &DB{path: name, bdb: db}
		st, err := d.all()
		in.Streams = len(st)
		if err != nil {
			return err
		}
		return d.view(func(tx *bolt.Tx) error {
			in.DamagedValues = damagedValues(tx)
			return nil
		})
	}
	dmg, err := boltfile.Verify(path, path, timeout, count)
	if errors.Is(err, ErrLocked) {
		in.Busy = true
		dmg, err = inspectCopy(path, timeout, count)
	}
	if err != nil {
		return in, withHint(err)
	}
	if dmg != nil {
		in.Damage = strings.Join(dmg.Reasons(), "; ")
	}
	return in, boltfile.Writable(path)
}

// inspectCopy verifies copies of path, which a running collector holds,
// until one was not torn by a commit (snapshotCopies tries; only a copy
// found corrupt is taken again).
func inspectCopy(path string, timeout time.Duration, check boltfile.Check) (*boltfile.Damage, error) {
	var last error
	for range snapshotCopies {
		dmg, err := verifyCopy(path, timeout, check)
		if err == nil || !errors.Is(err, ErrCorrupt) {
			return dmg, err
		}
		last = err
	}
	return nil, fmt.Errorf("checkpoint file %s is held by a running collector and %d copies of it were torn by its commits: %w", path, snapshotCopies, last)
}

// verifyCopy copies path to a private temporary file and verifies the copy.
func verifyCopy(path string, timeout time.Duration, check boltfile.Check) (*boltfile.Damage, error) {
	dir, err := os.MkdirTemp("", "collector-check-*")
	if err != nil {
		return nil, fmt.Errorf("copy checkpoint file %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	cp := filepath.Join(dir, "checkpoint.db")
	if err := copySnapshotFile(path, cp); err != nil {
		return nil, fmt.Errorf("copy checkpoint file %s: %w", path, err)
	}
	return boltfile.Verify(cp, path+" (copy)", timeout, check)
}
