package source

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/source/catalog"
)

// checkBatches checks the pages of one Run cut into batches: each at most
// limit records (0: no limit); a page emitted in several batches has every
// batch but the last marked Revisit with the cursor as it stood, so only
// its last batch moves the cursor (DESIGN item 4).
func checkBatches(t *testing.T, pages []cursor.Page, sizes []int, limit int) {
	t.Helper()
	var cur cursor.Cursor
	known := false // cur is known after the first batch
	for i, p := range pages {
		if limit > 0 && sizes[i] > limit {
			t.Fatalf("batch %d holds %d records, over %d", i, sizes[i], limit)
		}
		if p.Revisit {
			if i+1 >= len(pages) || pages[i+1].Index() != p.Index() || pages[i+1].Window() != p.Window() {
				t.Fatalf("batch %d is a revisit that no later batch of its page follows", i)
			}
			if known && (p.After.Watermark != cur.Watermark || (p.After.InFlight == nil) != (cur.InFlight == nil)) {
				t.Fatalf("batch %d moved the cursor: %+v after %+v", i, p.After, cur)
			}
			cur, known = p.After, true
			continue
		}
		cur, known = p.After, true
	}
	checkCursors(t, pages)
}

// C3: a server whose pages are larger than api.page_rows (6,000 rows for
// 5,000) is read completely; the poller learns the size, reserves room
// for it before the next fetches and reports it.
func TestPoller_C3_PagesLargerThanPageRowsAreCompleteAndReservedFor(t *testing.T) {
	t.Parallel()
	times := spread(time.Now().Add(-20*time.Hour), 15000, 4*time.Second)
	srv := newPageServer(t, times, 6000, nil)
	e := newEnv(t, pageServerConfig(srv), nil)
	p := e.poller(catalog.SourceDNS, "acme", true)
	col := newTally(len(times))
	if err := p.Run(t.Context(), cursor.Cursor{}, col); err != nil {
		t.Fatal(err)
	}
	pages, sizes, reserved := col.snapshot()
	if m := col.missing(); m != 0 || col.dups != 0 || col.bad != 0 {
		t.Fatalf("missing %d, duplicates %d, unreadable %d", m, col.dups, col.bad)
	}
	if fmt.Sprint(sizes) != "[6000 6000 3000]" {
		t.Fatalf("page sizes %v", sizes)
	}
	if fmt.Sprint(reserved) != "[5000 6000 6000]" {
		t.Fatalf("reserved %v, want page_rows first, then the size seen", reserved)
	}
	if got := p.Snapshot().PageRowsSeen; got != 6000 {
		t.Fatalf("snapshot PageRowsSeen = %d", got)
	}
	if got := testutilValue(pageRowsSeenOf(e, catalog.SourceDNS, "acme")); got != 6000 {
		t.Fatalf("collector_page_rows_seen = %v", got)
	}
	checkBatches(t, pages, sizes, 0)
	if !strings.Contains(e.logs.String(), "larger than configured") {
		t.Fatal("a page over page_rows was not reported")
	}
}

// C3, DESIGN item 5: one page of 600,000 records (a paged answer whose one
// page holds its whole result set: an answer without paging that large is
// taken as cut and split, see
// TestPoller_C3_AnAnswerWithoutPagingAsLargeAsAFullPageIsSplit) with
// MaxBatchRecords 50,000 arrives completely, in batches of at
// most 50,000 built one at a time: the poller never holds all the
// envelopes, so the heap stays near the body's size. Reservations never
// exceed MaxBatchRecords.
func TestPoller_C3_HugePageIsEmittedInBoundedBatches(t *testing.T) {
	// Not parallel: it measures the heap, which other tests would share.
	if testing.Short() {
		t.Skip("600,000 records")
	}
	const n, batch = 600_000, 50_000
	times := spread(time.Now().Add(-20*time.Hour), n, 100*time.Millisecond)
	srv := newPageServer(t, times, n, nil)
	cfg := pageServerConfig(srv)
	cfg.API.MaxBodyBytes = 512 << 20
	cfg.API.ResultCap, cfg.API.MaxPages = 2*n, 1000 // a result set of n rows is no truncated one
	e := newEnv(t, cfg, nil)
	pc := e.pollerConfig(catalog.SourceAuditLogs, "acme", true)
	pc.MaxBatchRecords = batch
	p := e.newPoller(pc)
	col := newTally(n)

	// A low GC target makes HeapInuse follow the live heap.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stop, peakc := make(chan struct{}), make(chan uint64)
	go func() {
		peak := uint64(0)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				peakc <- peak
				return
			case <-tick.C:
			}
		}
	}()
	err := p.Run(t.Context(), cursor.Cursor{}, col)
	close(stop)
	peak := <-peakc
	grew := int64(peak) - int64(base)
	t.Logf("heap in use: %d MiB before, peak %d MiB (+%d MiB)", base>>20, peak>>20, grew>>20)
	if err != nil {
		t.Fatal(err)
	}
	pages, sizes, reserved := col.snapshot()
	if m := col.missing(); m != 0 || col.dups != 0 || col.bad != 0 {
		t.Fatalf("missing %d, duplicates %d, unreadable %d", m, col.dups, col.bad)
	}
	if len(pages) != n/batch {
		t.Fatalf("%d batches, want %d", len(pages), n/batch)
	}
	checkBatches(t, pages, sizes, batch)
	for _, r := range reserved {
		if r > batch {
			t.Fatalf("reserved %d, over MaxBatchRecords", r)
		}
	}
	if got := p.Snapshot().PageRowsSeen; got != n {
		t.Fatalf("PageRowsSeen = %d", got)
	}
	// The body is about 40 MB and the record slices 14 MB; all 600,000
	// envelopes at once would add about 150 MB more.
	if grew > 160<<20 {
		t.Fatalf("heap grew by %d MiB for one page", grew>>20)
	}
}

// C5, DESIGN item 5: an answer over api.max_body_bytes is neither an
// endless re-fetch nor a lost window: the window is split and its halves
// asked, until every part fits.
func TestPoller_C3_BodyOverMaxBodyBytesSplitsTheWindow(t *testing.T) {
	t.Parallel()
	times := spread(time.Now().Add(-20*time.Hour), 3000, 20*time.Second)
	srv := newPageServer(t, times, 5000, func(s *pageServer) { s.pad = strings.Repeat("x", 60) })
	cfg := pageServerConfig(srv)
	cfg.API.MaxBodyBytes = 64 << 10 // about 600 records
	e := newEnv(t, cfg, nil)
	col := newTally(len(times))
	if err := e.poller(catalog.SourceDNS, "acme", true).Run(t.Context(), cursor.Cursor{}, col); err != nil {
		t.Fatal(err)
	}
	pages, sizes, _ := col.snapshot()
	if m := col.missing(); m != 0 || col.bad != 0 {
		t.Fatalf("missing %d, unreadable %d", m, col.bad)
	}
	checkBatches(t, pages, sizes, 0)
	if got := testutilValue(e.metrics.Splits(catalog.SourceDNS, "acme")); got < 3 {
		t.Fatalf("splits = %v", got)
	}
	if got := testutilValue(e.metrics.PollErrors(catalog.SourceDNS, "acme", "body_too_large")); got != 0 {
		t.Fatalf("poll errors{body_too_large} = %v", got)
	}
}

// C5: a window that cannot be split below the minimum window and still
// answers over max_body_bytes is a permanent error of the stream, logged
// with the window and counted; the watermark never moves past its records.
func TestPoller_C3_BodyOverMaxBodyBytesInAnUnsplittableWindowFails(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(-10 * time.Hour).Truncate(time.Second)
	times := spread(at, 2000, 0)
	srv := newPageServer(t, times, 5000, func(s *pageServer) { s.pad = strings.Repeat("x", 60) })
	cfg := pageServerConfig(srv)
	cfg.API.MaxBodyBytes = 64 << 10
	e := newEnv(t, cfg, nil)
	col := newTally(len(times))
	err := e.poller(catalog.SourceDNS, "acme", true).Run(t.Context(), cursor.Cursor{}, col)
	var bt *api.BodyTooLargeError
	if !errors.As(err, &bt) || !api.IsPermanent(err) || !strings.Contains(err.Error(), "cannot be split further") {
		t.Fatalf("err = %v, want a permanent *BodyTooLargeError", err)
	}
	if got := testutilValue(e.metrics.PollErrors(catalog.SourceDNS, "acme", "body_too_large")); got != 1 {
		t.Fatalf("poll errors{body_too_large} = %v", got)
	}
	if !strings.Contains(e.logs.String(), "kind=body_too_large") || !strings.Contains(err.Error(), "dns/acme [") {
		t.Fatalf("the failure does not name the window: %v", err)
	}
	pages, _, _ := col.snapshot()
	for _, p := range pages {
		if p.After.Watermark.After(at) {
			t.Fatalf("watermark moved past the unread records: %s", p.After.Watermark)
		}
	}
}
