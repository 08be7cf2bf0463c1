package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// hourPath partitions by hour, so that a batch spanning a day boundary
// meets three directories.
const hourPath = "{source}/{account}/{yyyy}/{mm}/{dd}/{hh}"

// fetchedAt is when the pages of timedBatch were fetched: later than any
// of their records.
var fetchedAt = time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC)

// timedBatch is a batch of dns/acme records whose record times are times,
// ids unique by first.
func timedBatch(t testing.TB, seq uint64, first int, times ...string) *record.Batch {
	t.Helper()
	var bld record.Builder
	b := &record.Batch{Source: "dns", Account: "acme", Seq: seq}
	for i, ts := range times {
		raw := fmt.Appendf(nil, `{"createdTime":%q,"id":%d,"queryName":"q%d.example.com"}`, ts, first+i, first+i)
		e, flaw := bld.Build("dns", "acme", "createdTime", fetchedAt.Add(-3*time.Hour), fetchedAt, fetchedAt, raw)
		if flaw != 0 {
			t.Fatal(flaw)
		}
		b.Envelopes = append(b.Envelopes, e)
	}
	return b
}

// idsByDir reads every data file below dir and returns the ids of each
// directory (relative to dir) in file and line order.
func idsByDir(t testing.TB, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".ndjson") || strings.Contains(path, "/.") {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		for _, l := range readLines(t, path) {
			i := strings.Index(l, `"id":"`)
			out[rel] = append(out[rel], l[i+6:i+6+64])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ids returns the ids of the envelopes of b at the indexes idx.
func ids(b *record.Batch, idx ...int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, b.Envelopes[i].ID)
	}
	return out
}

// With path_time record, each record goes to the directory of its own
// time (as Vector's file sink partitions by the event's timestamp): a
// batch spanning a day boundary goes to three files, each record once, in
// its batch order; by fetch time (the default) the whole batch goes to the
// directory of its fetch.
func TestPathTimeRecordPutsEachRecordInTheDirectoryOfItsTime(t *testing.T) {
	t.Parallel()
	times := []string{"2026-11-21T23:10:00.000Z", "2026-11-21T23:50:00.000Z", "2026-11-22T00:05:00.000Z", "2026-11-21T23:55:00.000Z", "2026-11-22T01:00:00.000Z"}
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			t.Parallel()
			for _, mode := range []string{PathTimeRecord, PathTimeFetched} {
				cfg := testConfig(t.TempDir())
				cfg.Path, cfg.PathTime, cfg.Gzip = hourPath, mode, gz
				s, _ := startSink(t, cfg)
				b := timedBatch(t, 0, 0, times...)
				mustWrite(t, s, b)
				got := idsByDir(t, cfg.Dir)
				want := map[string][]string{
					"dns/acme/2026/11/21/23": ids(b, 0, 1, 3),
					"dns/acme/2026/11/22/00": ids(b, 2),
					"dns/acme/2026/11/22/01": ids(b, 4),
				}
				if mode == PathTimeFetched {
					want = map[string][]string{"dns/acme/2026/11/22/02": ids(b, 0, 1, 2, 3, 4)}
				}
				if len(got) != len(want) {
					t.Errorf("%s: directories %v, want %v", mode, keys(got), keys(want))
				}
				for d, w := range want {
					if !slices.Equal(got[d], w) {
						t.Errorf("%s: %s holds %d records %v, want %d", mode, d, len(got[d]), got[d], len(w))
					}
				}
			}
		})
	}
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The ledger works across the directories of record time: after a crash,
// Recover cuts the parts of a batch the checkpoint's mark does not cover,
// in every directory they went to (one shared with a committed batch),
// and keeps every committed one.
func TestPathTimeRecordBatchesAreCutAtTheMarkInEveryDirectory(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t.TempDir())
	cfg.Path, cfg.PathTime = hourPath, PathTimeRecord
	ctx := context.Background()
	k := record.Stream{Source: "dns", Account: "acme"}

	s := openSink(t, cfg, nil)
	b0 := timedBatch(t, 0, 0, "2026-11-21T23:10:00.000Z", "2026-11-22T00:05:00.000Z")
	mustWrite(t, s, b0)
	mark, err := s.Mark(ctx, map[record.Stream]uint64{k: 1}) // b0 committed
	if err != nil {
		t.Fatal(err)
	}
	b1 := timedBatch(t, 1, 100, "2026-11-22T00:20:00.000Z", "2026-11-22T01:10:00.000Z", "2026-11-21T23:30:00.000Z")
	mustWrite(t, s, b1)
	if err := s.Shutdown(ctx); err != nil { // a crash: b1 never committed
		t.Fatal(err)
	}
	if n := len(idsByDir(t, cfg.Dir)["dns/acme/2026/11/22/01"]); n != 1 {
		t.Fatalf("before the restart, b1's record of 01h is not on disk (%d): the test proves nothing", n)
	}

	s = openSink(t, cfg, mark)
	got := idsByDir(t, cfg.Dir)
	want := map[string][]string{"dns/acme/2026/11/21/23": ids(b0, 0), "dns/acme/2026/11/22/00": ids(b0, 1)}
	for _, d := range []string{"dns/acme/2026/11/21/23", "dns/acme/2026/11/22/00", "dns/acme/2026/11/22/01"} {
		if !slices.Equal(got[d], want[d]) {
			t.Errorf("after Recover, %s holds %v, want %v (b0's records only)", d, got[d], want[d])
		}
	}
	// b1 comes again and lands once.
	mustWrite(t, s, b1)
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, v := range idsByDir(t, cfg.Dir) {
		all = append(all, v...)
	}
	slices.Sort(all)
	wantAll := append(ids(b0, 0, 1), ids(b1, 0, 1, 2)...)
	slices.Sort(wantAll)
	if !slices.Equal(all, wantAll) {
		t.Errorf("after b1 again: %d records, want %d, each once", len(all), len(wantAll))
	}
}

// A batch split by record time whose second part fails leaves its first
// part durable; the retry of the batch writes only the rest: each record
// once, in its directory.
func TestPathTimeRecordRetryAfterAFailedPartWritesOnlyTheRest(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t.TempDir())
	cfg.Path, cfg.PathTime = hourPath, PathTimeRecord
	s, _ := startSink(t, cfg)
	fl := &faults{}
	s.open = fl.open
	b := timedBatch(t, 0, 0, "2026-11-21T23:10:00.000Z", "2026-11-21T23:20:00.000Z", "2026-11-22T00:05:00.000Z")
	fired := false
	fl.set(func(fl *faults) {
		fl.onSync = func() { // after the first part's write: the second fails
			if !fired {
				fired = true
				fl.set(func(fl *faults) { fl.writeErr = syscall.EIO })
			}
		}
	})
	if err := s.Write(context.Background(), b); !errors.Is(err, syscall.EIO) {
		t.Fatalf("err = %v, want EIO from the second part", err)
	}
	got := idsByDir(t, cfg.Dir)
	if !slices.Equal(got["dns/acme/2026/11/21/23"], ids(b, 0, 1)) || len(got["dns/acme/2026/11/22/00"]) != 0 {
		t.Fatalf("after the failure: %v; want the first part only", got)
	}
	mustWrite(t, s, b)
	got = idsByDir(t, cfg.Dir)
	if !slices.Equal(got["dns/acme/2026/11/21/23"], ids(b, 0, 1)) || !slices.Equal(got["dns/acme/2026/11/22/00"], ids(b, 2)) {
		t.Errorf("after the retry: %v; want each record once in its hour", got)
	}
}
