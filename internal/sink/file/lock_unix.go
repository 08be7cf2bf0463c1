//go:build unix

package file

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the lock file in the root directory; hidden, so the stream
// scan skips it.
const lockName = ".lock"

// lockDir takes an exclusive advisory lock on dir, so that two collectors
// never append to (or repair) the same files. The lock dies with the
// process.
func lockDir(dir string) (unlock func() error, err error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is locked: another collector writes to %s", path, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f.Close, nil
}
