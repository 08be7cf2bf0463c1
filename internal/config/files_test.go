package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/secret"
)

// A ${file:PATH} and a *_file key name a small regular file: /dev/zero, a
// directory or a file over the bound is a configuration error naming the
// key and the path (issue 20, item 4), found before anything is read into
// memory; the commands exit 2 for it.
func TestLoadWith_RefusesFilesThatAreNotSmallRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", secret.MaxFileBytes+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"/dev/zero", "/dev/zero", "is not a regular file"},
		{"a directory", dir, "is not a regular file"},
		{"a file over 64 KiB", big, "is larger than 64 KiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if _, err := os.Stat(c.path); err != nil {
				t.Skipf("%s: %v", c.path, err)
			}
			ref := writeFile(t, validBase+"  secret: ${file:"+c.path+"}\n")
			_, err := LoadWith(ref, nil, LoadOptions{})
			want := "api.secret: ${file:" + c.path + "}: file " + c.path + " " + c.want
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("${file:}: %v\nwant %q", err, want)
			}

			keyed := writeFile(t, validBase+"  secret_file: "+c.path+"\n")
			l, err := LoadWith(keyed, nil, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = l.Config.CheckFiles()
			want = "api.secret_file: file " + c.path + " " + c.want
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("secret_file: %v\nwant %q", err, want)
			}
		})
	}
}
