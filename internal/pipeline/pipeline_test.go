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
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/checkpoint/checkpointtest"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
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
	started chan cursor.Cursor
	emitted atomic.Int64
}

func (s *scriptedPoller) Stream() record.Stream { return s.key }

func (*scriptedPoller) Learner() recheck.Observer { return nil }

func (s *scriptedPoller) Run(ctx context.Context, from cursor.Cursor, out source.Output) error {
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
			pg := cursor.Page{Batch: record.Batch{Source: s.key.Source, Account: s.key.Account, WindowStart: win.Start, WindowEnd: win.End, Page: p}, FetchedAt: t0}
			for r := 0; r < s.rows; r++ {
				raw := fmt.Sprintf(`{"createdTime":%q,"n":%d}`, win.Start.Format(time.RFC3339), int(s.emitted.Load()))
				id, _ := record.ID(s.key.Source, []byte(raw))
				pg.Batch.Envelopes = append(pg.Batch.Envelopes, record.Envelope{ID: id, Source: s.key.Source, Account: s.key.Account, Time: win.Start, Record: []byte(raw)})
				s.emitted.Add(1)
			}
			if p == s.pages-1 {
				pg.After = cursor.Cursor{Watermark: win.End}
			} else {
				pg.After = cursor.Cursor{Watermark: wm, InFlight: &cursor.Chain{Window: win, NextURL: fmt.Sprintf("next-%d", p+1), Pages: p + 1}}
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

// writeCalls returns how many times Write reached the sink.
func (s *testSink) writeCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
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

// written returns how many distinct records the sink took.
func (s *testSink) written() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
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
	p := New(testConfig(), db, one(s), pollers, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
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

// orderedSink is a testSink that asks for a stream's batches one at a time
// and in order (sink.InOrder), as the file sink does.
type orderedSink struct{ *testSink }

func (orderedSink) InOrder() bool { return true }

func TestCheckpointNeverPassesAnUnacknowledgedPage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ordered bool
		written int // records written while the first page is held
	}{{"concurrent", false, 50}, {"in order", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testCheckpointNeverPasses(t, tc.ordered, tc.written) })
		})
	}
}

// testCheckpointNeverPasses holds the stream's first page in the sink:
// the committed state must not move past it. A sink that takes a stream's
// batches concurrently writes every later page meanwhile; one that asks
// for them in order (sink.InOrder) writes none after it.
func testCheckpointNeverPasses(t *testing.T, ordered bool, written int) {
	store := &checkpointtest.Store{}
	release := make(chan struct{})
	s := &testSink{delay: func(b *record.Batch) time.Duration {
		if b.Page == 0 && b.WindowStart.Equal(t0) {
			<-release
		}
		return 0
	}}
	var target sink.Sink = s
	if ordered {
		target = orderedSink{s}
	}
	key := record.Stream{Source: "dns", Account: "acme"}
	cfg := testConfig()
	cfg.SinkWorkers = 4
	pl := &scriptedPoller{key: key, windows: 3, pages: 2, rows: 10, tail: true}
	p := New(cfg, store, []Target{{Name: "s", Sink: target}}, []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()

	synctest.Wait() // the first page waits in the sink
	if n := s.written(); n != written {
		t.Fatalf("%d records written while the first page is held, want %d", n, written)
	}
	time.Sleep(time.Minute) // commit ticks come and go
	synctest.Wait()
	if st, ok, _ := store.Load(t.Context(), key); ok {
		t.Fatalf("state committed while page 0 was unacknowledged: %+v", st)
	}
	close(release)
	synctest.Wait()
	if st, ok, _ := store.Load(t.Context(), key); !ok || !st.Watermark.Equal(t0.Add(3*time.Hour)) || st.Delivered != 60 {
		t.Fatalf("committed %+v (%v) once every page was acknowledged, want watermark %s and 60 rows", st, ok, t0.Add(3*time.Hour))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAStalledSinkBoundsTheBufferAndHoldsTheCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		s := &testSink{hold: make(chan struct{})}
		key := record.Stream{Source: "connections", Account: "acme"}
		cfg := testConfig()
		cfg.BufferRecords = 250
		cfg.SinkWorkers = 2
		pl := &scriptedPoller{key: key, windows: 50, pages: 4, rows: 50}
		p := New(cfg, store, one(s), []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		done := make(chan error)
		go func() { done <- p.Run(t.Context()) }()

		// The poller is blocked now: it can have emitted the records in the
		// buffer plus one page waiting for room, never more.
		synctest.Wait()
		emitted := pl.emitted.Load()
		if emitted > int64(cfg.BufferRecords)+50 {
			t.Fatalf("poller emitted %d records past a stalled sink; the buffer holds %d", emitted, cfg.BufferRecords)
		}
		if n := p.slots.inUse(); n > cfg.BufferRecords {
			t.Fatalf("buffer holds %d > %d", n, cfg.BufferRecords)
		}
		if _, ok, _ := store.Load(t.Context(), key); ok {
			t.Fatal("checkpoint moved while nothing was acknowledged")
		}
		close(s.hold)                  // the sink recovers
		if err := <-done; err != nil { // once mode: the poller returns by itself
			t.Fatal(err)
		}
		if n := s.written(); n != 50*4*50 {
			t.Fatalf("delivered %d, want %d", n, 50*4*50)
		}
	})
}

func TestStopDrainsWhatWasFetchedAndResumesFromTheCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		s := &testSink{}
		key := record.Stream{Source: "dns", Account: "acme"}
		pl := &scriptedPoller{key: key, windows: 2, pages: 2, rows: 10, tail: true}
		p := New(testConfig(), store, one(s), []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait() // the poller emitted everything and waits for the stop
		if n := pl.emitted.Load(); n != 40 {
			t.Fatalf("emitted %d records before the stop, want 40", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// A second run resumes where the first stopped.
		started := make(chan cursor.Cursor, 1)
		pl2 := &scriptedPoller{key: key, windows: 1, pages: 1, rows: 1, started: started}
		p2 := New(testConfig(), store, one(s), []Producer{pl2}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		if err := p2.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		if c := <-started; !c.Watermark.Equal(t0.Add(2*time.Hour)) || c.InFlight != nil {
			t.Fatalf("resumed from %+v", c)
		}
	})
}

func TestStopDeadlineAbandonsUnwrittenPagesWithoutCommittingThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		s := &testSink{hold: make(chan struct{})} // never released
		key := record.Stream{Source: "dns", Account: "acme"}
		cfg := testConfig()
		cfg.StopTimeout = 100 * time.Millisecond
		pl := &scriptedPoller{key: key, windows: 3, pages: 1, rows: 5, tail: true}
		p := New(cfg, store, one(s), []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait() // the sink holds the writes
		if s.holding.Load() == 0 {
			t.Fatal("no write reached the sink")
		}
		cancel()
		stopped := time.Now()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not honour the stop deadline")
		}
		if el := time.Since(stopped); el < cfg.StopTimeout {
			t.Fatalf("Run returned %v after the stop, before the %v deadline", el, cfg.StopTimeout)
		}
		if _, ok, _ := store.Load(t.Context(), key); ok {
			t.Fatal("pages the sink never acknowledged were committed")
		}
	})
}

// Inside the bubble, time.Now (the pipeline's clock when now is nil) is
// the fake clock: two minutes pass at once.
func TestStalledReportsAWedgedSinkOnlyWhileRecordsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &testSink{hold: make(chan struct{})}
		cfg := testConfig()
		cfg.StallTimeout = time.Minute
		pl := &scriptedPoller{key: record.Stream{Source: "dns", Account: "acme"}, windows: 1, pages: 1, rows: 10}
		p := New(cfg, &checkpointtest.Store{}, one(s), []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		if err := p.Stalled(); err != nil {
			t.Fatalf("an idle pipeline is not stalled: %v", err)
		}
		done := make(chan error)
		go func() { done <- p.Run(t.Context()) }()
		synctest.Wait()
		if s.holding.Load() != 1 {
			t.Fatalf("%d writes held, want 1", s.holding.Load())
		}
		if err := p.Stalled(); err != nil {
			t.Fatalf("stalled right away: %v", err)
		}
		time.Sleep(2 * time.Minute)
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
	})
}

// A poller that reserves room before each fetch never has more records in
// flight, reserved or buffered, than the buffer holds, however many streams
// run (DESIGN item 5).
func TestReservationsBoundPagesBeingFetched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
		p := New(cfg, &checkpointtest.Store{}, one(s), pollers, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait() // the buffer is full of held writes and reservations
		if n := p.slots.inUse(); n > cfg.BufferRecords {
			t.Fatalf("%d slots in use > %d", n, cfg.BufferRecords)
		}
		// 20 pollers of 100-record pages against a 300-record buffer: at most
		// three pages can be held at once, fetched or buffered.
		if pk := peak.Load(); pk > 3 || pk == 0 {
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
	})
}

// reservingPoller reserves room, "fetches" (counts itself as fetching),
// and emits pages until stopped.
type reservingPoller struct {
	key            record.Stream
	rows           int
	fetching, peak *atomic.Int64
}

func (r *reservingPoller) Stream() record.Stream { return r.key }

func (*reservingPoller) Learner() recheck.Observer { return nil }

func (r *reservingPoller) Run(ctx context.Context, from cursor.Cursor, out source.Output) error {
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
		pg := cursor.Page{Batch: record.Batch{Source: r.key.Source, Account: r.key.Account, WindowStart: win.Start, WindowEnd: win.End, Page: 0}, After: cursor.Cursor{Watermark: win.End}}
		for i := 0; i < r.rows; i++ {
			raw := fmt.Sprintf(`{"createdTime":%q,"i":%d}`, win.Start.Format(time.RFC3339), i)
			pg.Batch.Envelopes = append(pg.Batch.Envelopes, record.Envelope{ID: fmt.Sprint(r.key.Account, wm.Unix(), i), Source: r.key.Source, Account: r.key.Account, Record: []byte(raw)})
		}
		err := out.Emit(ctx, pg)
		r.fetching.Add(-1)
		if err != nil {
			return err
		}
		wm = win.End
	}
}

// one is the targets of a pipeline with the one sink s.
func one(s sink.Sink) []Target { return []Target{{Name: "test", Sink: s}} }
