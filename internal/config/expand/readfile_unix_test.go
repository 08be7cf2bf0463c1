//go:build unix

package expand

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe with no writer is refused at once; reading it would wait
// for a writer forever (issue 20, item 4).
func TestTreeRefusesANamedPipeWithoutHanging(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan []*KeyError, 1)
	go func() {
		errs, _ := Tree(nil, nil, map[string]any{"edge": map[string]any{"token": "${file:" + fifo + "}"}})
		done <- errs
	}()
	select {
	case errs := <-done:
		if len(errs) != 1 || errs[0].Key != "edge.token" || !strings.Contains(errs[0].Msg, "file "+fifo+" is not a regular file (a named pipe)") {
			t.Fatalf("errors %v", errs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a ${file:} of a named pipe hangs")
	}
}
