package checkpoint

import (
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

// BenchmarkDeliveredSetAt24hHorizon is issue 22's figure: a stream
// delivering 1 M records an hour whose delivered set is kept for a 24 h
// recheck horizon (a window log entry 24 h old holds it): 24 M keys,
// committed 5,000 at a time as the pipeline does. It reports the file's
// size per record kept and the process's resident memory while the filter
// reads the last minutes (bbolt maps the file; only the pages read are
// resident). Run it alone:
//
//	go test -run '^$' -bench DeliveredSetAt24hHorizon -benchtime 1x ./internal/checkpoint/
func BenchmarkDeliveredSetAt24hHorizon(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		path := filepath.Join(b.TempDir(), "checkpoint.db")
		db, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		k := record.Stream{Source: "dns", Account: "acme"}
		base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		const perHour, hours, batch = 1_000_000, 24, 5_000
		step := time.Hour / perHour
		keys := make([]cursor.Delivered, batch)
		n := 0
		began := time.Now()
		for n < perHour*hours {
			for i := range keys {
				keys[i] = cursor.Delivered{Hash: uint64(n+i) * 0x9e3779b97f4a7c15, Time: base.Add(time.Duration(n+i) * step).UnixMilli()}
			}
			n += batch
			wm := base.Add(time.Duration(n) * step)
			if err := db.Apply(ctx, Changes{
				States:    map[record.Stream]State{k: {Cursor: cursor.Cursor{Watermark: wm}}},
				Windows:   map[record.Stream]cursor.WindowChanges{k: {Put: []cursor.LoggedWindow{{Start: base, End: base.Add(time.Minute), Count: 1, FetchedAt: base}}}},
				Delivered: map[record.Stream][]cursor.Delivered{k: keys},
			}); err != nil {
				b.Fatal(err)
			}
		}
		fill := time.Since(began)
		// The filter of a fresh page and of a recheck of the last hour.
		end := base.Add(hours * time.Hour)
		t0 := time.Now()
		got, err := db.deliveredIn(ctx, k, end.Add(-time.Minute), end)
		if err != nil || len(got) == 0 {
			b.Fatalf("read back %d keys: %v", len(got), err)
		}
		lastMinute := time.Since(t0)
		counts, err := db.DeliveredCounts(ctx, k, end.Add(-time.Hour), end)
		if err != nil || len(counts) != 60 {
			b.Fatalf("counts: %d, %v", len(counts), err)
		}
		st, _ := os.Stat(path)
		rss, hwm := procKB("VmRSS"), procKB("VmHWM")
		db.Close()
		b.ReportMetric(float64(st.Size())/float64(n), "file-B/record")
		b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
		b.ReportMetric(float64(rss)/1024, "rss-MiB")
		b.ReportMetric(float64(hwm)/1024, "peak-rss-MiB")
		b.Logf("%d keys in %v (%d commits of %d); file %d MiB; last minute read in %v; RSS %d MiB, peak %d MiB",
			n, fill.Round(time.Second), n/batch, batch, st.Size()>>20, lastMinute, rss/1024, hwm/1024)
	}
}

// procKB reads a "Vm..." line of /proc/self/status in kB (0 when absent).
func procKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}
