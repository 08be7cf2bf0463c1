package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/window"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// scriptedPoller emits pages of n records for consecutive one-hour windows,
// as a source poller would, then returns (once mode) or waits for ctx.
type scriptedPoller struct {
	key     record.Stream
	windows int
	pages   int // pages per window
	rows    int // rows per page
	tail    bool
	started chan source.Cursor
	emitted atomic.Int64
}

func (s *scriptedPoller) Stream() record.Stream { return s.key }

func (s *scriptedPoller) Run(ctx context.Context, from source.Cursor, out source.Output) error {
	if s.started != nil {
		s.started <- from
	}
	wm := from.Watermark
	if wm.IsZero() {
		wm = t0
	}
	for w := 0; w < s.windows; w++ {
		win := window.Window{Start: wm, End: wm.Add(time.Hour)}
		for p := 0; p < s.pages; p++ {
			pg := source.Page{Stream: s.key, Window: win, Index: p, FetchedAt: t0}
			for r := 0; r < s.rows; r++ {
				raw := fmt.Sprintf(`{"createdTime":%q,"n":%d}`, win.Start.Format(time.RFC3339), int(s.emitted.Load()))
				id, _ := record.ID(s.key.Source, []byte(raw))
				pg.Envelopes = append(pg.Envelopes, record.Envelope{ID: id, Source: s.key.Source, Account: s.key.Account, Time: win.Start, Record: []byte(raw)})
				s.emitted.Add(1)
			}
			if p == s.pages-1 {
				pg.After = source.Cursor{Watermark: win.End}
			} else {
				pg.After = source.Cursor{Watermark: wm, InFlight: &source.Chain{Window: win, NextURL: fmt.Sprintf("next-%d", p+1), Pages: p + 1}}
			}
			if err := out.Emit(ctx, pg); err != nil {
				return err
			}
		}
		wm = win.End
	}
	if s.tail {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// testSink records what it is given and can fail or hold writes.
type testSink struct {
	mu      sync.Mutex
	ids     map[string]int
	writes  int
	failN   int           // fail this many writes first
	err     error         // what a failed write returns; "sink unavailable" when nil
	hold    chan struct{} // when not nil, every write waits on it
	holding atomic.Int64
	delay   func(b *record.Batch) time.Duration
}

func (s *testSink) Start(context.Context) error { return nil }
func (s *testSink) Ready(context.Context) error { return nil }
func (s *testSink) Shutdown(context.Context) error {
	return nil
}
func (s *testSink) Write(ctx context.Context, b *record.Batch) error {
	if s.hold != nil {
		s.holding.Add(1)
		select {
		case <-s.hold:
		case <-ctx.Done():
			s.holding.Add(-1)
			return ctx.Err()
		}
		s.holding.Add(-1)
	}
	if s.delay != nil {
		select {
		case <-time.After(s.delay(b)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.failN > 0 {
		s.failN--
		if s.err != nil {
			return s.err
		}
		return errors.New("sink unavailable")
	}
	if s.ids == nil {
		s.ids = map[string]int{}
	}
	for _, e := range b.Envelopes {
		s.ids[e.ID]++
	}
	return nil
}

func openStore(t *testing.T) *checkpoint.DB {
	t.Helper()
	db, err := checkpoint.Open(filepath.Join(t.TempDir(), "cp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func testConfig() Config {
	c := DefaultConfig()
	c.RetryInitial = time.Millisecond
	c.RetryMax = 5 * time.Millisecond
	c.StopTimeout = 5 * time.Second
	return c
}

func TestOnceDeliversEverythingAndCommitsTheLastWatermark(t *testing.T) {
	db := openStore(t)
	s := &testSink{failN: 3}
	pollers := []Producer{
		&scriptedPoller{key: record.Stream{Source: "dns", Account: "acme"}, windows: 5, pages: 3, rows: 100},
		&scriptedPoller{key: record.Stream{Source: "dns", Account: "acme-dev"}, windows: 4, pages: 1, rows: 0},
	}
	p := New(testConfig(), db, s, pollers, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(s.ids) != 1500 {
		t.Fatalf("delivered %d distinct records, want 1500", len(s.ids))
	}
	st, ok, err := db.Load(context.Background(), record.Stream{Source: "dns", Account: "acme"})
	if err != nil || !ok || !st.Watermark.Equal(t0.Add(5*time.Hour)) || st.InFlight != nil || st.Delivered != 1500 {
		t.Fatalf("acme state %+v ok=%v err=%v", st, ok, err)
	}
	st, _, _ = db.Load(context.Background(), record.Stream{Source: "dns", Account: "acme-dev"})
	if !st.Watermark.Equal(t0.Add(4 * time.Hour)) {
		t.Fatalf("empty windows must advance the watermark too: %+v", st)
	}
}

func TestCheckpointNeverPassesAnUnacknowledgedPage(t *testing.T) {
	db := openStore(t)
	// The stream's first page is held in the sink while every later page is
	// acknowledged; the committed state must not move past it.
	release := make(chan struct{})
	s := &testSink{delay: func(b *record.Batch) time.Duration {
		if b.Page == 0 && b.WindowStart.Equal(t0) {
			<-release
		}
		return 0
	}}
	key := record.Stream{Source: "dns", Account: "acme"}
	cfg := testConfig()
	cfg.SinkWorkers = 4
	pl := &scriptedPoller{key: key, windows: 3, pages: 2, rows: 10, tail: true}
	p := New(cfg, db, s, []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()

	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.ids) == 50 })
	time.Sleep(50 * time.Millisecond) // give a wrong commit the time to happen
	if st, ok, _ := db.Load(context.Background(), key); ok {
		t.Fatalf("state committed while page 0 was unacknowledged: %+v", st)
	}
	close(release)
	waitFor(t, func() bool {
		st, ok, _ := db.Load(context.Background(), key)
		return ok && st.Watermark.Equal(t0.Add(3*time.Hour)) && st.Delivered == 60
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestAStalledSinkBoundsTheBufferAndHoldsTheCheckpoint(t *testing.T) {
	db := openStore(t)
	s := &testSink{hold: make(chan struct{})}
	key := record.Stream{Source: "connections", Account: "acme"}
	cfg := testConfig()
	cfg.BufferRecords = 250
	cfg.SinkWorkers = 2
	pl := &scriptedPoller{key: key, windows: 50, pages: 4, rows: 50}
	p := New(cfg, db, s, []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()

	// Wait until the poller is blocked: it can have emitted the records in
	// the buffer plus one page waiting for room, never more.
	time.Sleep(300 * time.Millisecond)
	emitted := pl.emitted.Load()
	if emitted > int64(cfg.BufferRecords)+50 {
		t.Fatalf("poller emitted %d records past a stalled sink; the buffer holds %d", emitted, cfg.BufferRecords)
	}
	if n := p.slots.inUse(); n > cfg.BufferRecords {
		t.Fatalf("buffer holds %d > %d", n, cfg.BufferRecords)
	}
	if _, ok, _ := db.Load(context.Background(), key); ok {
		t.Fatal("checkpoint moved while nothing was acknowledged")
	}
	close(s.hold) // the sink recovers
	// Let the rest flow, then stop.
	deadline := time.Now().Add(10 * time.Second)
	for pl.emitted.Load() < 50*4*50 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	err := <-done // once mode: the poller returns by itself
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ids) != 50*4*50 {
		t.Fatalf("delivered %d, want %d", len(s.ids), 50*4*50)
	}
}

func TestStopDrainsWhatWasFetchedAndResumesFromTheCheckpoint(t *testing.T) {
	db := openStore(t)
	s := &testSink{}
	key := record.Stream{Source: "dns", Account: "acme"}
	pl := &scriptedPoller{key: key, windows: 2, pages: 2, rows: 10, tail: true}
	p := New(testConfig(), db, s, []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	for pl.emitted.Load() < 40 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A second run resumes where the first stopped.
	started := make(chan source.Cursor, 1)
	pl2 := &scriptedPoller{key: key, windows: 1, pages: 1, rows: 1, started: started}
	p2 := New(testConfig(), db, s, []Producer{pl2}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
	if err := p2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := <-started; !c.Watermark.Equal(t0.Add(2*time.Hour)) || c.InFlight != nil {
		t.Fatalf("resumed from %+v", c)
	}
}

func TestStopDeadlineAbandonsUnwrittenPagesWithoutCommittingThem(t *testing.T) {
	db := openStore(t)
	s := &testSink{hold: make(chan struct{})} // never released
	key := record.Stream{Source: "dns", Account: "acme"}
	cfg := testConfig()
	cfg.StopTimeout = 100 * time.Millisecond
	pl := &scriptedPoller{key: key, windows: 3, pages: 1, rows: 5, tail: true}
	p := New(cfg, db, s, []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	for s.holding.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not honour the stop deadline")
	}
	if _, ok, _ := db.Load(context.Background(), key); ok {
		t.Fatal("pages the sink never acknowledged were committed")
	}
}

func TestStalledReportsAWedgedSinkOnlyWhileRecordsWait(t *testing.T) {
	db := openStore(t)
	s := &testSink{hold: make(chan struct{})}
	clock := time.Now()
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	cfg := testConfig()
	cfg.StallTimeout = time.Minute
	pl := &scriptedPoller{key: record.Stream{Source: "dns", Account: "acme"}, windows: 1, pages: 1, rows: 10}
	p := New(cfg, db, s, []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), now)
	if err := p.Stalled(); err != nil {
		t.Fatalf("an idle pipeline is not stalled: %v", err)
	}
	done := make(chan error)
	go func() { done <- p.Run(context.Background()) }()
	waitFor(t, func() bool { return s.holding.Load() == 1 })
	if err := p.Stalled(); err != nil {
		t.Fatalf("stalled right away: %v", err)
	}
	advance(2 * time.Minute)
	if err := p.Stalled(); err == nil {
		t.Fatal("records waited 2m past a 1m stall timeout without being reported")
	}
	close(s.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := p.Stalled(); err != nil {
		t.Fatalf("stalled after everything was written: %v", err)
	}
}

// A poller that reserves room before each fetch never has more records in
// flight, reserved or buffered, than the buffer holds, however many streams
// run (DESIGN item 5).
func TestReservationsBoundPagesBeingFetched(t *testing.T) {
	db := openStore(t)
	s := &testSink{hold: make(chan struct{})}
	cfg := testConfig()
	cfg.BufferRecords = 300
	var pollers []Producer
	var fetching atomic.Int64
	var peak atomic.Int64
	for i := 0; i < 20; i++ {
		k := record.Stream{Source: "dns", Account: fmt.Sprintf("a%d", i)}
		pollers = append(pollers, &reservingPoller{key: k, rows: 100, fetching: &fetching, peak: &peak})
	}
	p := New(cfg, db, s, pollers, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	if n := p.slots.inUse(); n > cfg.BufferRecords {
		t.Fatalf("%d slots in use > %d", n, cfg.BufferRecords)
	}
	// 20 pollers of 100-record pages against a 300-record buffer: at most
	// three pages can be held at once, fetched or buffered.
	if pk := peak.Load(); pk > 3 {
		t.Fatalf("%d pages were being fetched at once with room for 3", pk)
	}
	close(s.hold)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := p.slots.inUse(); n != 0 {
		t.Fatalf("%d slots still held after Run", n)
	}
}

// reservingPoller reserves room, "fetches" (counts itself as fetching),
// and emits pages until stopped.
type reservingPoller struct {
	key            record.Stream
	rows           int
	fetching, peak *atomic.Int64
}

func (r *reservingPoller) Stream() record.Stream { return r.key }

func (r *reservingPoller) Run(ctx context.Context, from source.Cursor, out source.Output) error {
	wm := t0
	for {
		if err := out.Reserve(ctx, r.rows); err != nil {
			return err
		}
		n := r.fetching.Add(1)
		for {
			pk := r.peak.Load()
			if n <= pk || r.peak.CompareAndSwap(pk, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		win := window.Window{Start: wm, End: wm.Add(time.Minute)}
		pg := source.Page{Stream: r.key, Window: win, After: source.Cursor{Watermark: win.End}}
		for i := 0; i < r.rows; i++ {
			raw := fmt.Sprintf(`{"createdTime":%q,"i":%d}`, win.Start.Format(time.RFC3339), i)
			pg.Envelopes = append(pg.Envelopes, record.Envelope{ID: fmt.Sprint(r.key.Account, wm.Unix(), i), Source: r.key.Source, Account: r.key.Account, Record: []byte(raw)})
		}
		err := out.Emit(ctx, pg)
		r.fetching.Add(-1)
		if err != nil {
			return err
		}
		wm = win.End
	}
}
