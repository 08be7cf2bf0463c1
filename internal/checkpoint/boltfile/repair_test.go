package boltfile

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// A zeroed meta page needs a repair before bbolt's check can run; Repair
// proves it on a copy, saves the damaged file and rewrites the page, after
// which the file verifies whole.
func TestRepairRewritesAZeroedMetaPageAndSavesTheDamagedFile(t *testing.T) {
	f := makeFile(t)
	damaged := bytes.Clone(f.b)
	clear(damaged[f.pageSize : 2*f.pageSize]) // meta page 1: the previous transaction
	path := writeCopy(t, damaged)

	dmg, err := Verify(path, path, time.Second, checkBolt)
	if err != nil || !dmg.NeedsRepair() {
		t.Fatalf("Verify = %v, %v; want damage that needs a repair", dmg, err)
	}
	if got := strings.Join(dmg.Reasons(), "; "); got != "meta page 1: zeroed" {
		t.Fatalf("reasons %q", got)
	}
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	backup, fixed, err := Repair(path, time.Second, now, checkBolt)
	if err != nil {
		t.Fatal(err)
	}
	if backup != path+".damaged-20261120T000000Z" {
		t.Fatalf("backup %s", backup)
	}
	if saved, _ := os.ReadFile(backup); !bytes.Equal(saved, damaged) {
		t.Fatal("the saved copy is not the damaged file")
	}
	if d := fixed.Describe(path, backup); !strings.Contains(d, "at worst its last commit was lost") || !strings.Contains(d, "meta page 1 was rewritten from meta page 0") {
		t.Fatalf("Describe = %q", d)
	}
	if dmg, err := Verify(path, path, time.Second, checkBolt); err != nil || dmg != nil {
		t.Fatalf("after the repair Verify = %v, %v", dmg, err)
	}
}

// Damage beyond the meta pages is never repaired: the copy fails the
// owner's check, and the file stays as it was.
func TestRepairRefusesDamageBeyondTheMetaPages(t *testing.T) {
	f := makeFile(t)
	damaged := bytes.Clone(f.b)
	clear(damaged[:f.pageSize])
	for i := 2 * f.pageSize; i < len(damaged); i++ {
		damaged[i] = byte(i*7 + 3)
	}
	path := writeCopy(t, damaged)
	_, err := Verify(path, path, time.Second, checkBolt)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify = %v, want ErrCorrupt", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
		t.Fatal("a refused file was changed")
	}
}
