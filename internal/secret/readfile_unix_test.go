//go:build unix

package secret

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The file ReadFile opens is opened without blocking, so that a named
// pipe swapped in after its Stat cannot hang it either; its Stat then
// refuses it.
func TestOpenFlagsDoNotWaitForAPipesWriter(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, openFlags, 0)
		if err == nil {
			var fi os.FileInfo
			if fi, err = f.Stat(); err == nil {
				err = regular(fifo, fi, MaxFileBytes)
			}
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Fatalf("the opened pipe: %v, want ErrNotRegular", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("opening a named pipe waits for a writer")
	}
}
