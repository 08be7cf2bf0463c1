package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/checkpoint/checkpointtest"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// two is the targets of a pipeline with the sinks fast and slow.
func two(fast, slow sink.Sink) []Target {
	return []Target{{Name: "fast", Sink: fast}, {Name: "slow", Sink: slow}}
}

// A sink that stops acknowledging holds the other back: the fast sink
// writes no more than the buffer holds (pipeline.buffer_records bounds the
// records of both together, however far apart their speeds), nothing is
// committed while the slow one acknowledged nothing, and the slow one is
// named as the one behind (SinkLags, collector_sink_pending_records,
// collector_sink_oldest_pending_seconds, Stalled). Once it recovers, both
// have every record and the checkpoint is at the end.
func TestASlowSinkHoldsTheFastOneBackWithinTheBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		fast, slow := &testSink{}, &testSink{hold: make(chan struct{})}
		key := record.Stream{Source: "connections", Account: "acme"}
		cfg := testConfig()
		cfg.BufferRecords = 250
		cfg.SinkWorkers = 2
		cfg.StallTimeout = time.Minute
		pl := &scriptedPoller{key: key, windows: 50, pages: 4, rows: 50}
		reg := prometheus.NewRegistry()
		p := New(cfg, store, two(fast, slow), []Producer{pl}, reg, slog.New(slog.DiscardHandler), nil)
		done := make(chan error)
		go func() { done <- p.Run(t.Context()) }()

		synctest.Wait() // the slow sink holds two writes; the poller waits for room
		emitted := pl.emitted.Load()
		if emitted > int64(cfg.BufferRecords)+50 {
			t.Fatalf("poller emitted %d records past a stalled sink; the buffer holds %d", emitted, cfg.BufferRecords)
		}
		if n := p.slots.inUse(); n > cfg.BufferRecords {
			t.Fatalf("buffer holds %d > %d", n, cfg.BufferRecords)
		}
		if n := fast.written(); n == 0 || n > cfg.BufferRecords {
			t.Fatalf("the fast sink wrote %d records while the slow one acknowledged none; want some, at most the buffer (%d)", n, cfg.BufferRecords)
		}
		if _, ok, _ := store.Load(t.Context(), key); ok {
			t.Fatal("checkpoint moved while the slow sink acknowledged nothing")
		}
		time.Sleep(2 * time.Minute)
		held := p.pending.Load() // records of the pages handed on: the buffer's
		lags := p.SinkLags()
		if len(lags) != 2 || lags[0].Sink != "fast" || lags[0].Records != 0 || lags[1].Sink != "slow" ||
			lags[1].Records != held || lags[1].Oldest < 2*time.Minute {
			t.Fatalf("SinkLags() = %+v, want fast with nothing pending and slow with all %d records, the oldest for 2m", lags, held)
		}
		if sl := p.StreamSinkLags()[key]; len(sl) != 2 || sl[1].Records != held || sl[0].Records != 0 {
			t.Fatalf("StreamSinkLags()[%s] = %+v", key, sl)
		}
		want := `
# HELP collector_sink_pending_records Records handed to the sink (waiting in its queue or being written) and not yet acknowledged by it. A page holds its room in the buffer until every sink acknowledged it: the sink with the most pending holds the others back.
# TYPE collector_sink_pending_records gauge
collector_sink_pending_records{sink="fast"} 0
collector_sink_pending_records{sink="slow"} ` + strconv.FormatInt(held, 10) + `
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "collector_sink_pending_records"); err != nil {
			t.Fatal(err)
		}
		if err := p.Stalled(); err == nil || !strings.Contains(err.Error(), "sink slow") {
			t.Fatalf("Stalled() = %v, want it to name the slow sink", err)
		}

		close(slow.hold) // the slow sink recovers
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*testSink{"fast": fast, "slow": slow} {
			if n := s.written(); n != 50*4*50 {
				t.Errorf("%s sink: %d records, want %d", name, n, 50*4*50)
			}
		}
		if st, ok, _ := store.Load(t.Context(), key); !ok || !st.Watermark.Equal(t0.Add(50*time.Hour)) || st.Delivered != 50*4*50 {
			t.Fatalf("committed %+v, want the end", st)
		}
		if n := p.slots.inUse(); n != 0 {
			t.Fatalf("%d slots held after Run", n)
		}
	})
}

// The checkpoint moves only over pages that both sinks acknowledged: each
// sink holds another page (A the first, B the fourth) while acknowledging
// the rest; nothing is committed while A holds the first page, and once A
// lets it go the checkpoint stops before B's page.
func TestTheCheckpointMovesOnlyOverPagesEverySinkAcknowledged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		key := record.Stream{Source: "dns", Account: "acme"}
		holdA, holdB := make(chan struct{}), make(chan struct{})
		holding := func(window int, hold chan struct{}) func(b *record.Batch) time.Duration {
			return func(b *record.Batch) time.Duration {
				if b.WindowStart.Equal(t0.Add(time.Duration(window) * time.Hour)) {
					<-hold
				}
				return 0
			}
		}
		a, b := &testSink{delay: holding(0, holdA)}, &testSink{delay: holding(3, holdB)}
		cfg := testConfig()
		cfg.SinkWorkers = 4
		pl := &scriptedPoller{key: key, windows: 6, pages: 1, rows: 10, tail: true}
		p := New(cfg, store, []Target{{Name: "a", Sink: a}, {Name: "b", Sink: b}}, []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()

		synctest.Wait()
		if na, nb := a.written(), b.written(); na != 50 || nb != 50 {
			t.Fatalf("a wrote %d, b %d; want 50 each (all but the page each holds)", na, nb)
		}
		time.Sleep(time.Minute) // commit ticks come and go
		synctest.Wait()
		if st, ok, _ := store.Load(t.Context(), key); ok {
			t.Fatalf("committed %+v while sink a held the first page", st)
		}
		close(holdA)
		time.Sleep(time.Minute)
		synctest.Wait()
		if st, ok, _ := store.Load(t.Context(), key); !ok || !st.Watermark.Equal(t0.Add(3*time.Hour)) || st.Delivered != 30 {
			t.Fatalf("committed %+v (%v), want up to the page b holds: watermark %s, 30 rows", st, ok, t0.Add(3*time.Hour))
		}
		close(holdB)
		time.Sleep(time.Minute)
		synctest.Wait()
		if st, _, _ := store.Load(t.Context(), key); !st.Watermark.Equal(t0.Add(6*time.Hour)) || st.Delivered != 60 {
			t.Fatalf("committed %+v once both acknowledged everything", st)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// A sink that fails every write for a while retries its own batches and
// loses nothing; the other goes on as far as the buffer lets it, and
// /readyz (SinkWriteError) names the failing sink only, until it
// recovers.
func TestASinkFailingForAWhileThenRecoveringLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		key := record.Stream{Source: "dns", Account: "acme"}
		good, flaky := &testSink{}, &testSink{failN: 1 << 30, err: errors.New("broker unreachable")}
		cfg := testConfig()
		cfg.BufferRecords = 200
		pl := &scriptedPoller{key: key, windows: 40, pages: 2, rows: 25}
		p := New(cfg, store, []Target{{Name: "good", Sink: good}, {Name: "flaky", Sink: flaky}}, []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		done := make(chan error)
		go func() { done <- p.Run(t.Context()) }()

		time.Sleep(10 * time.Second) // many failed attempts
		synctest.Wait()
		if err := p.SinkWriteError("flaky"); err == nil || !strings.Contains(err.Error(), "broker unreachable") || !strings.Contains(err.Error(), "sink flaky") {
			t.Fatalf("SinkWriteError(flaky) = %v while every write fails", err)
		}
		if err := p.SinkWriteError("good"); err != nil {
			t.Fatalf("SinkWriteError(good) = %v: its writes succeed", err)
		}
		if n := good.written(); n > cfg.BufferRecords {
			t.Fatalf("the good sink took %d records while the other failed; the buffer holds %d", n, cfg.BufferRecords)
		}
		if _, ok, _ := store.Load(t.Context(), key); ok {
			t.Fatal("checkpoint moved while one sink acknowledged nothing")
		}

		flaky.mu.Lock()
		failed := flaky.writes
		flaky.failN = 0 // it recovers
		flaky.mu.Unlock()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*testSink{"good": good, "flaky": flaky} {
			if n := s.written(); n != 40*2*25 {
				t.Errorf("%s sink: %d records, want %d", name, n, 40*2*25)
			}
		}
		if st, ok, _ := store.Load(t.Context(), key); !ok || !st.Watermark.Equal(t0.Add(40*time.Hour)) || st.Delivered != 40*2*25 {
			t.Fatalf("committed %+v, want the end", st)
		}
		if err := p.WriteError(); err != nil {
			t.Fatalf("WriteError after the recovery: %v", err)
		}
		t.Logf("%d failed writes before the recovery", failed)
	})
}

// A permanent error of one sink stops the stream for every sink: Run names
// the stream and the sink, the checkpoint stays before the refused page
// (whatever the other sink wrote after it), the other stream goes on in
// both sinks.
func TestAPermanentErrorOfOneSinkStopsTheStreamForEverySink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := record.Stream{Source: "dns", Account: "bad"}
		good := record.Stream{Source: "dns", Account: "good"}
		refusing := &refusingSink{stream: bad, refuse: t0.Add(2 * time.Hour)}
		other := &testSink{}
		store := &checkpointtest.Store{}
		cfg := testConfig()
		cfg.SinkWorkers = 1
		badPoller := &scriptedPoller{key: bad, windows: 6, pages: 1, rows: 10, tail: true}
		goodPoller := &scriptedPoller{key: good, windows: 6, pages: 1, rows: 10}
		p := New(cfg, store, []Target{{Name: "lake", Sink: other}, {Name: "siem", Sink: refusing}}, []Producer{badPoller, goodPoller},
			prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		done := make(chan error, 1)
		go func() { done <- p.Run(t.Context()) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Hour):
			t.Fatal("Run did not end: the stopped stream's producer was not cancelled")
		}
		if err == nil || !strings.Contains(err.Error(), "stream dns/bad stopped: the sink siem refused") || !errors.Is(err, errSchema) {
			t.Fatalf("Run = %v, want an error naming dns/bad and the sink siem", err)
		}
		// The pages before the refused one that both sinks acknowledged
		// before the failure are committed (how many depends on the
		// interleaving of the two sinks' workers); none after it.
		all, _ := store.All(t.Context())
		if st := all[bad]; st.Watermark.After(t0.Add(2*time.Hour)) || st.Delivered > 20 {
			t.Fatalf("dns/bad committed %+v, past the refused window %s", st, t0.Add(2*time.Hour))
		}
		for _, c := range store.Commits() {
			if st, ok := c[bad]; ok && st.Watermark.After(t0.Add(2*time.Hour)) {
				t.Fatalf("a commit moved dns/bad past the refused batch: %+v", st)
			}
		}
		if st := all[good]; !st.Watermark.Equal(t0.Add(6*time.Hour)) || st.Delivered != 60 {
			t.Fatalf("dns/good committed %+v, want all six windows", st)
		}
		if got := testutil.ToFloat64(p.m.permanentErrors.WithLabelValues("dns", "bad", "siem")); got != 1 {
			t.Errorf("permanent errors of siem = %v, want 1", got)
		}
		if got := testutil.ToFloat64(p.m.permanentErrors.WithLabelValues("dns", "bad", "lake")); got != 0 {
			t.Errorf("permanent errors of lake = %v, want 0", got)
		}
		if n := p.slots.inUse(); n != 0 {
			t.Fatalf("%d slots still held after Run", n)
		}
	})
}

// A stop while one sink never acknowledges: Run returns by the stop
// deadline, commits nothing that sink did not acknowledge, and gives back
// every page's room, also of pages only the other sink wrote.
func TestAStopWithAWedgedSinkReturnsEveryPagesRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		fast, wedged := &testSink{}, &testSink{hold: make(chan struct{})}
		key := record.Stream{Source: "dns", Account: "acme"}
		cfg := testConfig()
		cfg.StopTimeout = 100 * time.Millisecond
		cfg.BufferRecords = 100
		pl := &scriptedPoller{key: key, windows: 100, pages: 1, rows: 10, tail: true}
		p := New(cfg, store, two(fast, wedged), []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := store.Load(t.Context(), key); ok {
			t.Fatal("pages the wedged sink never acknowledged were committed")
		}
		if n := p.slots.inUse(); n != 0 {
			t.Fatalf("%d slots held after Run", n)
		}
		if n := p.pending.Load(); n != 0 {
			t.Fatalf("%d records pending after Run", n)
		}
		for _, l := range p.SinkLags() {
			if l.Pages != 0 {
				t.Fatalf("%s: %d pages pending after Run", l.Sink, l.Pages)
			}
		}
	})
}

// A producer blocked on the full queue of a wedged sink (small pages: room
// is left, the queue is not) is stopped: the page it was handing on is
// finished for the sinks that never saw it, and every page's room comes
// back.
func TestAStopWhileASinksQueueIsFullGivesEveryPageBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		fast, wedged := &testSink{}, &testSink{hold: make(chan struct{})}
		key := record.Stream{Source: "dns", Account: "acme"}
		cfg := testConfig()
		cfg.StopTimeout = 100 * time.Millisecond
		cfg.BufferRecords = 5000
		pl := &scriptedPoller{key: key, windows: 3000, pages: 1, rows: 1, tail: true}
		p := New(cfg, store, two(fast, wedged), []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait()
		if n := pl.emitted.Load(); n < queueItems || n >= 3000 {
			t.Fatalf("%d pages emitted: want the producer blocked on the wedged sink's full queue", n)
		}
		if n := p.slots.inUse(); n >= cfg.BufferRecords {
			t.Fatalf("%d of %d slots in use: the room, not the queue, stopped the producer", n, cfg.BufferRecords)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n, r := p.slots.inUse(), p.pending.Load(); n != 0 || r != 0 {
			t.Fatalf("%d slots and %d records held after Run", n, r)
		}
		for _, l := range p.SinkLags() {
			if l.Pages != 0 {
				t.Fatalf("%s: %d pages pending after Run", l.Sink, l.Pages)
			}
		}
		if _, ok, _ := store.Load(t.Context(), key); ok {
			t.Fatal("pages the wedged sink never acknowledged were committed")
		}
	})
}
