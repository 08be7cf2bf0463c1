//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package boltfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestAFaultInMappedMemoryBecomesAnError proves the second line of defence:
// reading a mapping past the end of its file, as bbolt would on damage the
// checks missed, is an error wrapping ErrCorrupt, not a SIGBUS.
func TestAFaultInMappedMemoryBecomesAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "short")
	writeFile(t, path, []byte("one page, then nothing"))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size := 4 * os.Getpagesize()
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)

	var sum byte
	err = Guard(path, func() error {
		sum += m[size-1] // past the end of the file: SIGBUS
		return nil
	})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Guard = %v (read %d), want ErrCorrupt", err, sum)
	}
	if want := "checkpoint file " + path + " is damaged: bbolt failed reading it"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}
