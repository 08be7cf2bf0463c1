package expand

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/secret"
)

// A ${file:PATH} reads a small regular file and nothing else (issue 20,
// item 4): /dev/zero once grew `check --print` to 7.4 GB in 30 s. Each
// refusal names the key and the path, never the content.
func TestTreeRefusesFilesThatAreNotSmallRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("s", secret.MaxFileBytes+1)), 0o600); err != nil {
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
