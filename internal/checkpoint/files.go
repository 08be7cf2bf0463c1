package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
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

// create makes a new checkpoint file at path, atomically: the file is
// created and initialized (bbolt's meta pages, then our buckets, each
// fsynced) under a temporary name in the same directory, fsynced, and then
// linked to path, which fails rather than replace a file that appeared
// meanwhile; then the directory is fsynced. A crash leaves either no file or
// a complete one at path, never an empty or half-made checkpoint, which Open
// refuses. bbolt's lock is held on the file throughout.
func create(path string, o options) error {
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
	bdb, err := openBolt(tmp, tmp, o.timeout, false)
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("create checkpoint file %s: %w", path, err)
	}
	err = func() error {
		d := &DB{path: path, bdb: bdb, now: o.now}
		if err := d.init(); err != nil {
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

// removeLeftovers removes the temporary files of path that a crash left
// behind: those nobody holds locked. A file still being made (bbolt's
// exclusive lock) or proven (a shared lock) is locked by its maker and
// stays. On a platform without file locks they stay
// too, ignored. Best effort: a file that cannot be removed is ignored.
func removeLeftovers(path string) {
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

// repair rewrites the damaged meta pages of the file at path (see damage)
// so that bbolt's consistency check can run, under an exclusive lock on the
// file:
//
//  1. read the meta pages again, under the lock;
//  2. copy the file to a temporary file, rewrite the meta pages there, and
//     verify that copy like any checkpoint (bbolt's check, every value); a
//     copy that fails means the damage goes beyond the meta pages: repair
//     refuses and the file stays as it was;
//  3. copy the file as it is to PATH.damaged-TIMESTAMP (fsynced);
//  4. write the rewritten meta pages into the file and fsync it.
//
// A crash in step 4 is harmless: only damaged pages are written, the intact
// meta is never touched. It returns the backup's path and the damage
// repaired; no damage to repair (another process repaired it meanwhile) is
// no error and no backup.
func repair(path string, o options) (backup string, dmg *damage, err error) {
	f, fi, err := openRegular(path, os.O_RDWR)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = f.Close() }()
	if err := lockFile(f, true, o.timeout); err != nil {
		return "", nil, fmt.Errorf("repair checkpoint file %s: %w", path, err)
	}
	h, err := readHeader(f, fi.Size())
	if err != nil {
		return "", nil, fmt.Errorf("repair checkpoint file %s: %w", path, err)
	}
	if err := h.check(path); err != nil {
		return "", nil, err
	}
	if dmg = h.damage(); dmg == nil || len(dmg.fixes) == 0 {
		return "", dmg, nil
	}
	if err := proveRepair(f, h, dmg, path, o); err != nil {
		return "", nil, err
	}
	if backup, err = saveBackup(f, h.size, path, o.now()); err != nil {
		return "", nil, err
	}
	for _, fx := range dmg.fixes {
		if _, err := f.WriteAt(fx.page, int64(fx.index)*h.pageSize); err != nil {
			return backup, nil, fmt.Errorf("repair checkpoint file %s: rewrite meta page %d (the file as it was is saved as %s): %w", path, fx.index, backup, err)
		}
	}
	if err := f.Sync(); err != nil {
		return backup, nil, fmt.Errorf("repair checkpoint file %s (the file as it was is saved as %s): %w", path, backup, err)
	}
	return backup, dmg, syncDir(filepath.Dir(path))
}

// proveRepair applies dmg's fixes to a copy of f and verifies the copy. It
// holds a shared lock on the copy throughout (bbolt's read-only open shares
// it), so that no other Open takes it for a leftover and removes it.
func proveRepair(f *os.File, h fileHeader, dmg *damage, path string, o options) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPattern(filepath.Base(path), "repair"))
	if err != nil {
		return fmt.Errorf("repair checkpoint file %s: %w", path, err)
	}
	defer func() {
		_ = os.Remove(tmp.Name())
		_ = tmp.Close()
	}()
	err = lockFile(tmp, false, 0)
	if err == nil {
		_, err = io.Copy(tmp, io.NewSectionReader(f, 0, h.size))
	}
	for _, fx := range dmg.fixes {
		if err == nil {
			_, err = tmp.WriteAt(fx.page, int64(fx.index)*h.pageSize)
		}
	}
	if err != nil {
		return fmt.Errorf("repair checkpoint file %s: copy: %w", path, err)
	}
	after, err := verify(tmp.Name(), path+" (with meta pages rewritten)", o.timeout)
	switch {
	case err != nil:
		return fmt.Errorf("checkpoint file %s is damaged beyond its meta pages (%s): %w", path, strings.Join(dmg.reasons, "; "), err)
	case after != nil && len(after.fixes) > 0:
		return fmt.Errorf("checkpoint file %s: rewriting its meta pages did not repair them (%s): %w", path, strings.Join(after.reasons, "; "), ErrCorrupt)
	}
	return nil
}

// saveBackup copies the first size bytes of f to PATH.damaged-TIMESTAMP
// (or, if taken, PATH.damaged-TIMESTAMP.N), mode 0600, fsynced.
func saveBackup(f *os.File, size int64, path string, now time.Time) (string, error) {
	stem := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	for n := 0; n < 100; n++ {
		name := stem
		if n > 0 {
			name = fmt.Sprintf("%s.%d", stem, n)
		}
		b, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("repair checkpoint file %s: save a copy: %w", path, err)
		}
		_, err = io.Copy(b, io.NewSectionReader(f, 0, size))
		if err == nil {
			err = b.Sync()
		}
		if cerr := b.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(name)
			return "", fmt.Errorf("repair checkpoint file %s: save a copy as %s: %w", path, name, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("repair checkpoint file %s: save a copy: %s and 99 more names are taken", path, stem)
}
