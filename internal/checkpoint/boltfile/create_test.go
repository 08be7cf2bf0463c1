package boltfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestANewFileIsCreatedAtomicallyAndLeftoversGo(t *testing.T) {
	cases := []struct {
		name string
		// before prepares dir and returns the names that must remain
		// besides cp.db.
		before func(t *testing.T, dir string) []string
	}{
		{"a new checkpoint leaves no temporary file behind", func(*testing.T, string) []string { return nil }},
		{"a temporary file a crash left behind is removed", func(t *testing.T, dir string) []string {
			writeFile(t, filepath.Join(dir, ".cp.db.new-123456"), []byte("half made"))
			writeFile(t, filepath.Join(dir, ".cp.db.repair-42"), nil)
			return nil
		}},
		{"a temporary file in use is left alone", func(t *testing.T, dir string) []string {
			if !fileLocks {
				t.Skip("no file locks on this platform: leftovers are never removed")
			}
			busy := filepath.Join(dir, ".cp.db.new-777")
			db, err := bolt.Open(busy, 0o600, nil) // holds the lock, as Create does
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return []string{".cp.db.new-777"}
		}},
		{"a repair copy being proven is left alone", func(t *testing.T, dir string) []string {
			if !fileLocks {
				t.Skip("no file locks on this platform: leftovers are never removed")
			}
			busy := filepath.Join(dir, ".cp.db.repair-9")
			writeFile(t, busy, nil)
			f, err := os.Open(busy)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			if err := lockFile(f, false, 0); err != nil { // as proveRepair does
				t.Fatal(err)
			}
			return []string{".cp.db.repair-9"}
		}},
		{"other files in the directory are left alone", func(t *testing.T, dir string) []string {
			writeFile(t, filepath.Join(dir, "cp.db.new-1"), nil)
			writeFile(t, filepath.Join(dir, ".other.db.new-1"), nil)
			return []string{".other.db.new-1", "cp.db.new-1"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			keep := tc.before(t, dir)
			path := filepath.Join(dir, "cp.db")
			RemoveLeftovers(path)
			if err := Create(path, time.Second, initStates); err != nil {
				t.Fatal(err)
			}
			want := append([]string{"cp.db"}, keep...)
			slices.Sort(want)
			if names := dirNames(t, dir); !slices.Equal(names, want) {
				t.Fatalf("the directory holds %q, want %q", names, want)
			}
			// The new file is complete: bbolt's check and the owner's init.
			dmg, err := Verify(path, path, time.Second, checkBolt)
			if err != nil || dmg != nil {
				t.Fatalf("verify of the new file = %v, %v", dmg, err)
			}
		})
	}
}
