//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAPathThatIsAFIFOIsNotACheckpointAndDoesNotHang(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		d, err := Open(path)
		if err == nil {
			d.Close()
		}
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Open of a FIFO hangs")
	}
	if !errors.Is(err, ErrNotCheckpoint) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a FIFO = %v, want ErrNotCheckpoint only", err)
	}
	if want := "checkpoint path " + path + " is a FIFO, not a checkpoint file"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

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
	err = guard(path, func() error {
		sum += m[size-1] // past the end of the file: SIGBUS
		return nil
	})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("guard = %v (read %d), want ErrCorrupt", err, sum)
	}
	if want := "checkpoint file " + path + " is damaged: bbolt failed reading it"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}
