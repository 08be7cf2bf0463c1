//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package checkpoint

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAPathThatIsAFIFOIsNotACheckpointAndDoesNotHang(t *testing.T) {
	t.Parallel()
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
