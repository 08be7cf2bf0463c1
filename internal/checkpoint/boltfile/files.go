package boltfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Temporary files live next to the checkpoint, hidden, named after it:
// ".NAME.new-*" while a new checkpoint is made, ".NAME.repair-*" while a
// repair is proven on a copy.
func tempPattern(base, kind string) string { return "." + base + "." + kind + "-*" }

// openRegular opens path with flag if it is a regular file (symbolic links
// followed). A directory, FIFO, socket or device is refused with
// ErrNotCheckpoint before anything opens it: opening a FIFO blocks until a
// writer comes. The open itself does not block either, should the path
// change in between.
func openRegular(path string, flag int) (*os.File, fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open checkpoint file %s: %w", path, err)
	}
	if err := regular(path, fi); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, flag|openNonblock, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open checkpoint file %s: %w", path, err)
	}
	if fi, err = f.Stat(); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("open checkpoint file %s: %w", path, err)
	}
	if err := regular(path, fi); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func regular(path string, fi fs.FileInfo) error {
	m := fi.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "not a regular file (mode " + m.String() + ")"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("checkpoint path %s is %s, not a checkpoint file: %w", path, what, ErrNotCheckpoint)
}

// syncDir makes the directory's entries (a rename, a link, a new file)
// durable. Windows cannot sync a directory and needs not.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Create makes a new checkpoint file at path, atomically: the file is
// created and initialized (bbolt's meta pages, then the owner's buckets by
// init, each fsynced) under a temporary name in the same directory,
// fsynced, and then linked to path, which fails rather than replace a file
// that appeared meanwhile; then the directory is fsynced. A crash leaves
// either no file or a complete one at path, never an empty or half-made
// checkpoint, which Verify refuses. bbolt's lock is held on the file
// throughout; timeout bounds the wait for it.
func Create(path string, timeout time.Duration, init func(*bolt.DB) error) error {
	dir, base := filepath.Dir(path), filepath.Base(path)
	f, err := os.CreateTemp(dir, tempPattern(base, "new"))
	if err != nil {
		return fmt.Errorf("create checkpoint file %s: %w", path, err)
	}
	tmp := f.Name()
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("create checkpoint file %s: %w", path, err)
	}
	bdb, err := Open(tmp, tmp, timeout, false)
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("create checkpoint file %s: %w", path, err)
	}
	err = func() error {
		if err := init(bdb); err != nil {
			return err
		}
		if err := syncFile(tmp); err != nil {
			return err
		}
		// Link, not rename: it never replaces a file made meanwhile.
		switch err := os.Link(tmp, path); {
		case errors.Is(err, fs.ErrExist):
			return nil // another made it first; Open verifies theirs
		case err != nil:
			// A file system without hard links: rename, if path is
			// still free.
			if _, serr := os.Lstat(path); !errors.Is(serr, fs.ErrNotExist) {
				return nil
			}
			if err := os.Rename(tmp, path); err != nil {
				return fmt.Errorf("create checkpoint file %s: %w", path, err)
			}
		}
		return syncDir(dir)
	}()
	// Drop the temporary name while the lock is held, then the lock.
	if rerr := os.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = fmt.Errorf("create checkpoint file %s: %w", path, rerr)
	}
	if cerr := bdb.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("create checkpoint file %s: %w", path, cerr)
	}
	return err
}

// CanCreate reports whether Create (after the directory is made, as the
// owner's open makes it) can make a file at path, without making anything:
// the nearest existing directory above path must be a directory this
// process may write into. Its errors read like those of making the
// directory or the file.
func CanCreate(path string) error {
	dir := filepath.Dir(path)
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		switch {
		case (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) && filepath.Dir(d) != d:
			continue // os.MkdirAll makes it, or fails above it
		case err != nil:
			return fmt.Errorf("open checkpoint file %s: create directory: %w", path, err)
		case !fi.IsDir():
			// What os.MkdirAll says of it.
			return fmt.Errorf("open checkpoint file %s: create directory: %w", path, &fs.PathError{Op: "mkdir", Path: d, Err: syscall.ENOTDIR})
		}
		switch err := writableDir(d); {
		case err != nil && d == dir:
			return fmt.Errorf("create checkpoint file %s: directory %s is not writable: %w", path, d, err)
		case err != nil:
			return fmt.Errorf("open checkpoint file %s: create directory: cannot make %s in %s: %w", path, dir, d, err)
		}
		return nil
	}
}

// Writable reports whether the existing file at path can be opened for
// writing, as bbolt's writable open opens it, without taking its lock or
// writing anything. A path that is not a regular file is ErrNotCheckpoint.
func Writable(path string) error {
	f, _, err := openRegular(path, os.O_RDWR)
	if err != nil {
		return err
	}
	return f.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// RemoveLeftovers removes the temporary files of path that a crash left
// behind: those nobody holds locked. A file still being made (bbolt's
// exclusive lock) or proven (a shared lock) is locked by its maker and
// stays. On a platform without file locks they stay
// too, ignored. Best effort: a file that cannot be removed is ignored.
func RemoveLeftovers(path string) {
	if !fileLocks {
		return
	}
	dir, base := filepath.Dir(path), filepath.Base(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() ||
			!strings.HasPrefix(name, strings.TrimSuffix(tempPattern(base, "new"), "*")) &&
				!strings.HasPrefix(name, strings.TrimSuffix(tempPattern(base, "repair"), "*")) {
			continue
		}
		p := filepath.Join(dir, name)
		f, err := os.OpenFile(p, os.O_RDONLY|openNonblock, 0)
		if err != nil {
			continue
		}
		if lockFile(f, true, 0) == nil {
			_ = os.Remove(p)
		}
		_ = f.Close()
	}
}
