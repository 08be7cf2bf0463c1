package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadFileTakesUpToItsBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := filepath.Join(dir, "at")
	if err := os.WriteFile(at, []byte(strings.Repeat("a", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(at, 100); err != nil || len(b) != 100 {
		t.Fatalf("a file of exactly the bound: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile(at, 99); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a file one byte over the bound: %v, want ErrTooLarge", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "nope"), 100); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
	if _, err := ReadFile(dir, 100); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a directory: %v, want ErrNotRegular", err)
	}
}

// FromFile reads through ReadFile: a secret file swapped for a device or a
// huge file after start is refused at its next read, never read without
// end (issue 20, item 4).
func TestFromFileRefusesWhatIsNoSmallRegularFile(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("s", MaxFileBytes+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := FromFile("/dev/zero"); !errors.Is(err, ErrNotRegular) || time.Since(start) > 5*time.Second {
		t.Fatalf("FromFile(/dev/zero) = %v after %v, want ErrNotRegular at once", err, time.Since(start))
	}
	if _, err := FromFile(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("FromFile of %d bytes = %v, want ErrTooLarge", MaxFileBytes+1, err)
	}
	small := filepath.Join(t.TempDir(), "small")
	if err := os.WriteFile(small, []byte("hunter22\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := FromFile(small); err != nil || s.Reveal() != "hunter22" {
		t.Fatalf("FromFile(small) = %q, %v", s.Reveal(), err)
	}
}
