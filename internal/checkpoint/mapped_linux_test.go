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

// Reading a delivered set maps its pages into the process; the read lets
// go of them as it ends (eachSpan), and a commit of what it wrote
// (DB.unmap), so that what a long backfill keeps mapped is not every set
// it read since the last commit, let alone ever (C7's once must not cost
// memory that grows with the backlog; issue 30: a 2-day backfill's reads
// between two commits mapped up to 40 MiB). The pages stay readable: the
// set reads back whole after.
func TestReadsAndCommitsUnmapWhatTheDeliveredSetsMapped(t *testing.T) {
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
	// A few 4 KiB pages (the meta pages, the buckets' roots) may stay;
	// the set's 2.4 MB may not.
	const most = 256
	if m := mappedKiB(t, path); m > most {
		t.Errorf("after the commits %d KiB of the file stay mapped", m)
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
	if m := mappedKiB(t, path); m > most {
		t.Errorf("after counting the set %d KiB of the file stay mapped", m)
	}
	got, err := db.DeliveredOf(ctx, k, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range got {
		if c != 1 {
			t.Fatalf("key %d of the set is held %d times, committed once", i, c)
		}
	}
	if m := mappedKiB(t, path); m > most {
		t.Errorf("after asking the set for every key %d KiB of the file stay mapped", m)
	}
	if got, err := db.deliveredIn(ctx, k, base, base.Add(48*time.Hour)); err != nil || len(got) != n {
		t.Fatalf("after the reads the set reads %d of %d records (%v)", len(got), n, err)
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

// A small read, such as a tailing stream's once filter makes at every
// poll, leaves the few pages it mapped mapped, so that the next read and
// commit do not fault the tree's top back in (an madvise and its faults
// at every read and commit were a fifth of an idle collector's CPU); the
// pages of many such reads are let go of as they add up, so that what
// stays mapped stays about unmapAfter (DB.letGo), however many reads.
func TestSmallReadsKeepTheirPagesMappedUpToABound(t *testing.T) {
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
	before := mappedKiB(t, path)
	if got, err := db.DeliveredOf(ctx, k, keys[n/2:n/2+5]); err != nil || len(got) != 5 || got[0] != 1 {
		t.Fatalf("DeliveredOf: %v, %v", got, err)
	}
	if after := mappedKiB(t, path); after <= before {
		t.Errorf("a read of 5 keys let go of the pages it mapped: %d KiB mapped before, %d after", before, after)
	}
	// Reads all over the set: 2.4 MB of it, more than unmapAfter.
	most := 256 + 2*unmapAfter/1024
	for i := 0; i < n; i += 97 {
		got, err := db.DeliveredOf(ctx, k, keys[i:i+1])
		if err != nil || got[0] != 1 {
			t.Fatalf("DeliveredOf key %d: %v, %v", i, got, err)
		}
		if m := mappedKiB(t, path); m > most {
			t.Fatalf("after %d small reads %d KiB of the file stay mapped (at most %d)", i/97+1, m, most)
		}
	}
}
