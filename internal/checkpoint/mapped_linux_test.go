//go:build linux

package checkpoint

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// mappedKiB is how much of the file at path is mapped into this process
// (the Rss of its mappings in /proc/self/smaps), in KiB.
func mappedKiB(t *testing.T, path string) int {
	t.Helper()
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	kib, ours := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			ours = len(fields) >= 6 && fields[5] == path
		case ours && len(fields) == 3 && fields[0] == "Rss:":
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			kib += n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return kib
}

// Reading a delivered set maps its pages into the process; a commit lets
// go of them (DB.unmap), so that what a long backfill keeps mapped is what
// the reads between two commits touch, not every set it ever read (C7's
// once must not cost memory that grows with the backlog). The pages stay
// readable: the set reads back whole after the commit.
func TestACommitUnmapsWhatReadsOfTheDeliveredSetsMapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, path := openTemp(t)
	k := record.Stream{Source: "dns", Account: "acme"}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const n = 200_000 // about 2.4 MB of entries over 48 hours
	keys := make([]cursor.Delivered, 0, n)
	for i := range n {
		keys = append(keys, cursor.Delivered{Hash: uint64(i) * 0x9e3779b97f4a7c15, Time: base.Add(time.Duration(i) * 864 * time.Millisecond).UnixMilli()})
	}
	state := map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: base}}}
	for c := range slicesOf(keys, 8) {
		if err := db.Apply(ctx, Changes{States: state, Delivered: map[record.Stream][]cursor.Delivered{k: c}}); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := db.DeliveredCounts(ctx, k, base, base.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, c := range counts {
		total += c
	}
	if total != n {
		t.Fatalf("the set counts %d records, %d were committed", total, n)
	}
	read := mappedKiB(t, path)
	if read < 2048 {
		t.Fatalf("reading a %d-record set mapped %d KiB of the file: the test measures nothing", n, read)
	}
	if err := db.Apply(ctx, Changes{States: state}); err != nil {
		t.Fatal(err)
	}
	after := mappedKiB(t, path)
	t.Logf("mapped after reading the set: %d KiB; after the next commit: %d KiB", read, after)
	if after > read/8 {
		t.Fatalf("after the commit %d KiB of the file stay mapped (%d KiB after the read)", after, read)
	}
	if got, err := db.deliveredIn(ctx, k, base, base.Add(48*time.Hour)); err != nil || len(got) != n {
		t.Fatalf("after the commit the set reads %d of %d records (%v)", len(got), n, err)
	}
}

// slicesOf yields s in parts equal but for the last, interleaved so that
// each part spans the whole of s's times, as a page of a window served in
// no order does.
func slicesOf(s []cursor.Delivered, parts int) func(func([]cursor.Delivered) bool) {
	return func(yield func([]cursor.Delivered) bool) {
		for p := range parts {
			var part []cursor.Delivered
			for i := p; i < len(s); i += parts {
				part = append(part, s[i])
			}
			if !yield(part) {
				return
			}
		}
	}
}
