//go:build unix

package secret

import (
	"os"
	"syscall"
)

// openFlags open a file for ReadFile without blocking: a named pipe put in
// place of the file after its Stat opens at once (and is then refused)
// instead of waiting for a writer.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
