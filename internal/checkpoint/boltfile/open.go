package boltfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FileMode and DirMode: a checkpoint file is readable by its owner only.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// Errors of the package, wrapped with the file concerned; package
// checkpoint exports them as its own. Test them with errors.Is.
var (
	// ErrLocked: another process holds the file's lock.
	ErrLocked = errors.New("checkpoint file locked")
	// ErrCorrupt: the file was a checkpoint (or a bbolt file) once and is
	// damaged now.
	ErrCorrupt = errors.New("checkpoint corrupt")
	// ErrNotCheckpoint: the path names something that never was a
	// checkpoint (a directory, a FIFO, a text file, another program's
	// bbolt file). An error never wraps both it and ErrCorrupt.
	ErrNotCheckpoint = errors.New("not a checkpoint file")
	// ErrUnknownVersion: the file was written by a newer (or an unknown)
	// version of bbolt or of the collector.
	ErrUnknownVersion = errors.New("unknown checkpoint version")
)

// Check is the owner's check of a file's contents, run by Verify on the
// file opened read-only once its layout passed; name is the file's name
// in messages. It returns an error wrapping ErrCorrupt, ErrNotCheckpoint
// or ErrUnknownVersion for a file it refuses.
type Check func(db *bolt.DB, name string) error

// Guard runs fn in a goroutine of its own with runtime/debug.SetPanicOnFault
// on, so that a fault in bbolt's mapping of the file (damage the checks
// before missed, or the file shrinking meanwhile) or a panic in bbolt
// becomes an error wrapping ErrCorrupt instead of killing the process. fn
// must release what it holds with defer. bbolt's check runs in a goroutine
// of bbolt's own, which this does not cover; the walk of every page before
// it keeps it inside the file.
func Guard(name string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("checkpoint file %s is damaged: bbolt failed reading it (%v): %w", name, r, ErrCorrupt)
			}
		}()
		done <- fn()
	}()
	return <-done
}

// Open opens the existing file at path with bbolt; name is the file's
// name in messages. It never creates a file (Create does, atomically) and
// never blocks on a FIFO; it waits timeout for the file's lock, then fails
// with an error wrapping ErrLocked. Fsync stays on. A file bbolt refuses
// is an error wrapping ErrCorrupt or ErrUnknownVersion, and a panic of
// bbolt while it loads the file becomes one too. Run it under Guard, so
// that a fault in the mapping becomes an error as well.
func Open(path, name string, timeout time.Duration, readOnly bool) (bdb *bolt.DB, err error) {
	// bbolt may panic while it loads a damaged file, with the file open and
	// locked: close the file at least.
	var file *os.File
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				_ = file.Close()
			}
			bdb, err = nil, fmt.Errorf("checkpoint file %s is corrupt (%v): %w", name, r, ErrCorrupt)
		}
	}()
	bdb, err = bolt.Open(path, FileMode, &bolt.Options{
		Timeout:  timeout,
		ReadOnly: readOnly,
		OpenFile: func(name string, flag int, perm fs.FileMode) (*os.File, error) {
			// Never create: a new file is made by create, atomically.
			// Never block: the path may have become a FIFO.
			f, err := os.OpenFile(name, flag&^os.O_CREATE|openNonblock, perm)
			file = f
			return f, err
		},
		// Fsync stays on: a Commit returns once its State is on disk, so a
		// crash never takes back a checkpoint the pipeline relied on
		// (STYLE 14).
		NoSync: false,
	})
	switch {
	case err == nil:
		return bdb, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("checkpoint file %s is locked by another process (waited %s): %w", name, timeout, ErrLocked)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("checkpoint file %s is corrupt or not a bbolt file (%w): %w", name, err, ErrCorrupt)
	case errors.Is(err, berrors.ErrVersionMismatch):
		return nil, fmt.Errorf("checkpoint file %s has an unknown bbolt version (%w): %w", name, err, ErrUnknownVersion)
	default:
		return nil, fmt.Errorf("open checkpoint file %s: %w", name, err)
	}
}

// NarrowMode narrows the mode of the file at path to FileMode when it is
// wider.
func NarrowMode(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("open checkpoint file %s: %w", path, err)
	}
	if fi.Mode().Perm() == FileMode {
		return nil
	}
	if err := os.Chmod(path, FileMode); err != nil {
		return fmt.Errorf("open checkpoint file %s: narrow mode %s to %s: %w", path, fi.Mode().Perm(), FileMode, err)
	}
	return nil
}

// Verify checks the existing file at path without writing to it; name is
// the file's name in messages. check, the owner's check of the contents
// (bbolt's consistency check, the layout, every value), runs last, on the
// file opened read-only. It holds bbolt's shared lock while it reads,
// so a running collector makes it fail with ErrLocked, never with a torn
// read taken for damage. It returns the damage of the meta pages that bbolt
// survives (nil if none); when that damage needs a repair, bbolt's check
// cannot run, and Verify stops after the walk: Repair, then Verify again.
func Verify(path, name string, timeout time.Duration, check Check) (dmg *Damage, err error) {
	f, _, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	err = Guard(name, func() error {
		// bbolt's read-only open reads only the two meta pages, within
		// the file, before it maps it; it takes the shared lock first.
		bdb, openErr := Open(path, name, timeout, true)
		if openErr == nil {
			defer func() { _ = bdb.Close() }()
		} else if errors.Is(openErr, ErrLocked) {
			return openErr
		}
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("open checkpoint file %s: %w", name, err)
		}
		h, err := readHeader(f, fi.Size())
		if err != nil {
			return fmt.Errorf("open checkpoint file %s: read: %w", name, err)
		}
		if err := h.check(name); err != nil {
			return err
		}
		if openErr != nil {
			if errors.Is(openErr, ErrCorrupt) || errors.Is(openErr, ErrUnknownVersion) {
				return openErr
			}
			return fmt.Errorf("checkpoint file %s is damaged: bbolt cannot open it (%w): %w", name, openErr, ErrCorrupt)
		}
		dmg = h.damage()
		if err := h.walk(f, name); err != nil {
			if dmg != nil {
				return fmt.Errorf("checkpoint file %s is damaged beyond its meta pages (%s): %w", name, strings.Join(dmg.reasons, "; "), err)
			}
			return err
		}
		if dmg.NeedsRepair() {
			return nil // bbolt's check would assert on a meta page header
		}
		return check(bdb, name)
	})
	return dmg, err
}
