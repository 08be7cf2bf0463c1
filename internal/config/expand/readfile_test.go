package expand

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A ${file:PATH} reads a small regular file and nothing else (issue 20,
// item 4): /dev/zero once grew `check --print` to 7.4 GB in 30 s. Each
// refusal names the key and the path, never the content.
func TestTreeRefusesFilesThatAreNotSmallRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("s", MaxFileBytes+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, want string
	}{
		{"an endless device", "/dev/zero", "is not a regular file (a character device)"},
		{"a file over the bound", big, "is larger than 64 KiB"},
		{"a directory", dir, "is not a regular file (a directory)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if _, err := os.Stat(c.path); err != nil {
				t.Skipf("%s: %v", c.path, err)
			}
			m := map[string]any{"api": map[string]any{"secret": "${file:" + c.path + "}"}}
			errs, _ := Tree(nil, nil, m)
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", errs)
			}
			got := errs[0].Error()
			if !strings.HasPrefix(got, "api.secret: ${file:"+c.path+"}: file "+c.path+" ") || !strings.Contains(got, c.want) {
				t.Fatalf("error %q, want the key, the path and %q", got, c.want)
			}
			if strings.Contains(got, "sss") {
				t.Fatalf("error %q holds the file's content", got)
			}
		})
	}
}

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
