//go:build linux

package checkpoint

import "syscall"

// unmapPages drops the process's mapping of the n bytes of the checkpoint
// file's map at addr (madvise MADV_DONTNEED): the pages stay in the page
// cache, and a later read maps them again from there. bbolt maps the file
// read-only and shared, so nothing is lost; the caller holds a read
// transaction, so that the map is not moved meanwhile.
func unmapPages(addr uintptr, n int64) error {
	if n <= 0 {
		return nil
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(n), syscall.MADV_DONTNEED); e != 0 {
		return e
	}
	return nil
}
