//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package boltfile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// openNonblock makes opening a FIFO return at once instead of waiting for a
// writer; on a regular file it changes nothing.
const openNonblock = syscall.O_NONBLOCK

// fileLocks: lockFile takes the lock bbolt takes (flock), so a lock taken
// here excludes every bbolt user of the file.
const fileLocks = true

// lockRetry is how often lockFile tries again, as bbolt does.
const lockRetry = 50 * time.Millisecond

// lockFile takes an exclusive (or shared) lock on f, trying for up to
// timeout (once if timeout is 0). It fails with ErrLocked when another holds
// a conflicting lock. The lock ends when f is closed.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		case !time.Now().Before(deadline):
			return fmt.Errorf("%s is locked by another process (waited %s): %w", f.Name(), timeout, ErrLocked)
		}
		time.Sleep(lockRetry)
	}
}

// accessWX is access(2)'s W_OK|X_OK, which package syscall does not name.
const accessWX = 0x2 | 0x1

// writableDir reports whether this process may create files in dir
// (access(2): EACCES, or EROFS on a read-only file system). It writes
// nothing.
func writableDir(dir string) error { return syscall.Access(dir, accessWX) }
