//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package boltfile

import (
	"os"
	"time"
)

// openNonblock: no flag is needed (or known) here.
const openNonblock = 0

// fileLocks: this platform has no flock; lockFile does nothing, so a repair
// relies on bbolt's lock taken just before it, and leftover temporary files
// are left alone rather than removed while a creator may still use them.
const fileLocks = false

// lockFile does nothing on this platform.
func lockFile(*os.File, bool, time.Duration) error { return nil }

// writableDir cannot ask this platform without writing; Create will say.
func writableDir(string) error { return nil }
