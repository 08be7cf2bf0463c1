package boltfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Repair rewrites the damaged meta pages of the file at path (see Damage)
// so that bbolt's consistency check can run, under an exclusive lock on the
// file (waiting timeout for it):
//
//  1. read the meta pages again, under the lock;
//  2. copy the file to a temporary file, rewrite the meta pages there, and
//     Verify that copy with check like any checkpoint (bbolt's check, every
//     value); a copy that fails means the damage goes beyond the meta
//     pages: Repair refuses and the file stays as it was;
//  3. copy the file as it is to PATH.damaged-TIMESTAMP (fsynced);
//  4. write the rewritten meta pages into the file and fsync it.
//
// A crash in step 4 is harmless: only damaged pages are written, the intact
// meta is never touched. It returns the backup's path and the damage
// repaired; no damage to repair (another process repaired it meanwhile) is
// no error and no backup. now names the backup.
func Repair(path string, timeout time.Duration, now time.Time, check Check) (backup string, dmg *Damage, err error) {
	f, fi, err := openRegular(path, os.O_RDWR)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = f.Close() }()
	if err := lockFile(f, true, timeout); err != nil {
		return "", nil, fmt.Errorf("repair checkpoint file %s: %w", path, err)
	}
	h, err := readHeader(f, fi.Size())
	if err != nil {
		return "", nil, fmt.Errorf("repair checkpoint file %s: %w", path, err)
	}
	if err := h.check(path); err != nil {
		return "", nil, err
	}
	if dmg = h.damage(); !dmg.NeedsRepair() {
		return "", dmg, nil
	}
	if err := proveRepair(f, h, dmg, path, timeout, check); err != nil {
		return "", nil, err
	}
	if backup, err = saveBackup(f, h.size, path, now); err != nil {
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
func proveRepair(f *os.File, h fileHeader, dmg *Damage, path string, timeout time.Duration, check Check) error {
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
	after, err := Verify(tmp.Name(), path+" (with meta pages rewritten)", timeout, check)
	switch {
	case err != nil:
		return fmt.Errorf("checkpoint file %s is damaged beyond its meta pages (%s): %w", path, strings.Join(dmg.reasons, "; "), err)
	case after.NeedsRepair():
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
		b, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
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
