package boltfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// writeCopy writes b as cp.db in a directory of its own.
func writeCopy(t testing.TB, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cp.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// initStates is the owner's init of the tests: one bucket.
func initStates(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("states"))
		return err
	})
}

// checkBolt is the owner's check of the tests: the bucket of initStates
// and bbolt's consistency check.
func checkBolt(db *bolt.DB, name string) error {
	return db.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("states")) == nil {
			return fmt.Errorf("%s has no states bucket: %w", name, ErrCorrupt)
		}
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s failed the consistency check: %w: %w", name, errors.Join(errs...), ErrCorrupt)
		}
		return nil
	})
}

// file is a real bbolt file of several transactions.
type file struct {
	b        []byte
	pageSize int
	last     uint64 // the last transaction, in meta page 0
}

// makeFile makes a file with Create and commits of 60 values each until
// its last transaction is an even one of at least 4 (bbolt writes
// transaction N to meta page N%2), and returns it.
func makeFile(t testing.TB) file {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cp.db")
	if err := Create(path, time.Second, initStates); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, FileMode, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var f file
	for round := 0; round < 4 || f.last%2 != 0; round++ {
		err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("states"))
			for i := range 60 {
				v := bytes.Repeat([]byte{byte('a' + round)}, 300)
				if err := b.Put(fmt.Appendf(nil, "dns\x00acct-%02d", i), v); err != nil {
					return err
				}
			}
			f.last = uint64(tx.ID())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if f.b, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	h := headerOf(t, f.b)
	if h.current() != 0 || h.meta[0].txid != f.last {
		t.Fatalf("the new file's current meta is %+v, want transaction %d in meta page 0", h.meta, f.last)
	}
	f.pageSize = int(h.pageSize)
	return f
}

func headerOf(t testing.TB, b []byte) fileHeader {
	t.Helper()
	h, err := readHeader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return h
}
