//go:build !linux

package checkpoint

// unmapPages does nothing where MADV_DONTNEED is not known to keep a
// shared file map's contents (see the Linux version).
func unmapPages(addr uintptr, n int64) error { return nil }
