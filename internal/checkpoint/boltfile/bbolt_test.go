package boltfile

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestWhatBboltDoesWithADamagedFirstMetaPage records what bbolt 1.5.0 does
// itself, which Verify and Repair rely on: it opens a file whose first meta page is
// damaged, read-only and read-write, from the second meta page (the older
// transaction when the damaged page held the last one). Its consistency
// check asserts on page 0's header, so it fails when the header is damaged
// (a zeroed page) and passes when only the meta is. The next commit rewrites
// meta page 0 and the file is whole again.
func TestWhatBboltDoesWithADamagedFirstMetaPage(t *testing.T) {
	h := makeFile(t)
	ps := h.pageSize
	cases := []struct {
		name      string
		damage    func([]byte)
		checkSays string // "" if the check passes
	}{
		{"a zeroed first meta page", func(b []byte) { clear(b[:ps]) }, "page 0: has unexpected type/flags: 0"},
		{"a flipped byte in the first meta", func(b []byte) { b[pageHeaderSize+40] ^= 0x01 }, ""},
	}
	for _, tc := range cases {
		for _, readOnly := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, read-only %v", tc.name, readOnly), func(t *testing.T) {
				b := bytes.Clone(h.b)
				tc.damage(b)
				path := writeCopy(t, b)
				db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: readOnly, Timeout: time.Second})
				if err != nil {
					t.Fatalf("bbolt refuses the file: %v", err)
				}
				defer db.Close()
				var txid uint64
				var checkErrs []string
				if err := db.View(func(tx *bolt.Tx) error {
					txid = uint64(tx.ID())
					for err := range tx.Check() {
						checkErrs = append(checkErrs, err.Error())
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if txid != h.last-1 {
					t.Fatalf("bbolt reads transaction %d, want %d from meta page 1", txid, h.last-1)
				}
				switch got := strings.Join(checkErrs, "; "); {
				case tc.checkSays == "" && got != "":
					t.Fatalf("bbolt's check: %s; want no error", got)
				case !strings.Contains(got, tc.checkSays):
					t.Fatalf("bbolt's check: %q; want %q", got, tc.checkSays)
				}
				if readOnly {
					return
				}
				if err := db.Update(func(*bolt.Tx) error { return nil }); err != nil {
					t.Fatalf("an empty commit: %v", err)
				}
				after, _ := os.ReadFile(path)
				hdr := headerOf(t, after)
				if hdr.damage() != nil || hdr.meta[0].txid != h.last {
					t.Fatalf("after a commit: meta page 0 = %+v, want whole with transaction %d", hdr.meta[0], h.last)
				}
			})
		}
	}
}

// TestBboltAloneCrashesOnATruncatedFile shows why Verify reads the file
// itself first: bbolt's check of a truncated file touches its mapping past
// the end of the file, a SIGBUS that kills the process. It runs bbolt in a
// child process.
func TestBboltAloneCrashesOnATruncatedFile(t *testing.T) {
	if path := os.Getenv("BOLTFILE_TEST_BBOLT_CHECK"); path != "" {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(3)
		}
		_ = db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				fmt.Println("check:", err)
			}
			return nil
		})
		os.Exit(0)
	}
	h := makeFile(t)
	// Cut the file before its freelist page, the first page bbolt's check
	// reads, where bbolt still maps it: mmap rounds the size up to a power
	// of two, at least 32 KiB.
	hdr := headerOf(t, h.b)
	freelist := int(hdr.meta[hdr.current()].freelist) * h.pageSize
	cut := 0
	for n := 2 * h.pageSize; n <= freelist; n += h.pageSize {
		if mapped := max(1<<15, 1<<bits.Len(uint(n-1))); mapped > freelist {
			cut = n
			break
		}
	}
	if cut == 0 {
		t.Fatalf("no cut before the freelist page at %d stays in the mapping", freelist)
	}
	path := writeCopy(t, h.b[:cut])
	t.Logf("truncated to %d of %d bytes; the freelist page is at %d", cut, len(h.b), freelist)
	cmd := exec.Command(os.Args[0], "-test.run=^TestBboltAloneCrashesOnATruncatedFile$")
	cmd.Env = append(os.Environ(), "BOLTFILE_TEST_BBOLT_CHECK="+path)
	out, err := cmd.CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("SIGBUS")) && !bytes.Contains(out, []byte("unexpected fault address")) {
		t.Fatalf("bbolt on a truncated file: %v, output:\n%s\nwant a crash", err, out)
	}

	// Verify, in this very process, says what happened instead.
	if _, err := Verify(path, path, time.Second, checkBolt); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify = %v, want ErrCorrupt", err)
	}
}
