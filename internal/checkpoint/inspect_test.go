package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/svcexport/collector/internal/record"
)

// tree lists every entry under dir with its size and mode, so that a test
// sees whether anything was created, removed or changed.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		size := fi.Size()
		if fi.IsDir() {
			size = 0
		}
		out = append(out, fmt.Sprintf("%s %s %d %s", p, fi.Mode(), size, fi.ModTime().Format(time.RFC3339Nano)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Inspect (collector check) says what Open (collector run) will say of a
// checkpoint path, with the same message, and changes nothing: no file,
// no directory, no repair.
func TestInspectSaysWhatOpenSaysAndChangesNothing(t *testing.T) {
	t.Parallel()
	root := os.Geteuid() == 0
	cases := []struct {
		name string
		// make prepares dir and returns the checkpoint path.
		make func(t *testing.T, dir string) string
		// exact: Inspect's error text is Open's (else the same class
		// and the same start: Open's names a temporary file).
		exact   bool
		want    error // nil: both succeed
		streams int
		skip    bool
	}{
		{name: "a path with no file yet", make: func(t *testing.T, dir string) string { return filepath.Join(dir, "cp.db") }},
		{name: "a path whose directories do not exist yet", make: func(t *testing.T, dir string) string {
			return filepath.Join(dir, "state", "deeper", "cp.db")
		}},
		{name: "a collector checkpoint", streams: 50, make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "cp.db")
			validFile(t, p)
			return p
		}},
		{name: "a text file", exact: true, want: ErrNotCheckpoint, make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "hostname")
			writeFile(t, p, []byte("vm\n"))
			return p
		}},
		{name: "a directory", exact: true, want: ErrNotCheckpoint, make: func(t *testing.T, dir string) string { return dir }},
		{name: "another program's bbolt file", exact: true, want: ErrNotCheckpoint, make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "other.db")
			db, err := bolt.Open(p, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err }); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{name: "an empty file", exact: true, want: ErrCorrupt, make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "cp.db")
			writeFile(t, p, nil)
			return p
		}},
		{name: "a path below a file", exact: true, want: fs.ErrInvalid, make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "file")
			writeFile(t, p, []byte("x"))
			return filepath.Join(p, "sub", "cp.db")
		}},
		{name: "a new file in a directory without write permission", skip: root, want: fs.ErrPermission, make: func(t *testing.T, dir string) string {
			ro := filepath.Join(dir, "ro")
			if err := os.Mkdir(ro, 0o500); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(ro, "cp.db")
		}},
		{name: "a path whose directory would be made in one without write permission", skip: root, want: fs.ErrPermission, make: func(t *testing.T, dir string) string {
			ro := filepath.Join(dir, "ro")
			if err := os.Mkdir(ro, 0o500); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(ro, "state", "cp.db")
		}},
		{name: "a checkpoint without write permission", skip: root, exact: true, want: fs.ErrPermission, make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "cp.db")
			validFile(t, p)
			if err := os.Chmod(p, 0o400); err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.skip {
				t.Skip("root may write anywhere")
			}
			dir := t.TempDir()
			path := tc.make(t, dir)
			before := tree(t, dir)
			in, ierr := Inspect(path, time.Second)
			if after := tree(t, dir); !slices.Equal(after, before) {
				t.Fatalf("Inspect changed the directory:\nbefore %q\nafter  %q", before, after)
			}

			d, oerr := Open(path)
			if oerr == nil {
				d.Close()
			}
			switch {
			case tc.want == nil && (ierr != nil || oerr != nil):
				t.Fatalf("Inspect = %v, Open = %v; want both to succeed", ierr, oerr)
			case tc.want == nil:
				if in.Exists != (tc.streams > 0) || in.Streams != tc.streams || in.Busy || in.Damage != "" {
					t.Fatalf("Inspect = %+v, want %d streams", in, tc.streams)
				}
				return
			case ierr == nil || oerr == nil:
				t.Fatalf("Inspect = %v, Open = %v; want both to fail", ierr, oerr)
			case tc.exact && ierr.Error() != oerr.Error():
				t.Fatalf("Inspect says\n  %v\nOpen says\n  %v", ierr, oerr)
			case !tc.exact && !strings.HasPrefix(oerr.Error(), strings.SplitN(ierr.Error(), ":", 2)[0]):
				t.Fatalf("Inspect says\n  %v\nOpen says\n  %v\nwant the same start", ierr, oerr)
			}
			if tc.want == fs.ErrInvalid {
				return // ENOTDIR: what os.MkdirAll says, no class of its own
			}
			if !errors.Is(ierr, tc.want) || !errors.Is(oerr, tc.want) {
				t.Fatalf("Inspect = %v, Open = %v; want both %v", ierr, oerr, tc.want)
			}
		})
	}
}

// A running collector holds its checkpoint: Inspect checks a copy, never
// takes a lock that would stop the collector's next commit, and says so.
func TestInspectOfAFileARunningCollectorHolds(t *testing.T) {
	t.Parallel()
	d, path := openTemp(t, WithOpenTimeout(100*time.Millisecond))
	ctx := context.Background()
	k := record.Stream{Source: "dns", Account: "acme"}
	if err := d.Commit(ctx, k, sampleState()); err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(path, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("Inspect of a held file: %v", err)
	}
	if !in.Exists || !in.Busy || in.Streams != 1 || !strings.Contains(in.String(), "running collector") {
		t.Fatalf("Inspect = %+v (%s), want busy with 1 stream", in, in)
	}
	// The collector goes on committing.
	s := sampleState()
	s.Watermark = t0.Add(time.Hour)
	if err := d.Commit(ctx, k, s); err != nil {
		t.Fatalf("commit after Inspect: %v", err)
	}
}
