package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/checkpoint/checkpointtest"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/window"
)

// roomPoller behaves like a source poller that reserves room for a page of
// the configured size before each fetch and then gets another size from the
// server. After start, pages times: it reserves reserveRows, fetches for
// fetch (both fake time in a synctest bubble) and, when gate is not nil,
// until gate is closed, reserves again for rows when regrow is set, and
// emits a page of rows records. Then it returns (once mode).
type roomPoller struct {
	key         record.Stream
	reserveRows int
	rows        int
	pages       int
	regrow      bool
	start       time.Duration
	fetch       time.Duration
	gate        chan struct{}
}

func (r *roomPoller) Stream() record.Stream { return r.key }

func (*roomPoller) Learner() recheck.Observer { return nil }

func (r *roomPoller) Run(ctx context.Context, _ cursor.Cursor, out source.Output) error {
	wm := t0
	time.Sleep(r.start)
	for i := 0; i < r.pages; i++ {
		if err := out.Reserve(ctx, r.reserveRows); err != nil {
			return err
		}
		time.Sleep(r.fetch)
		if r.gate != nil {
			select {
			case <-r.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if r.regrow {
			if err := out.Reserve(ctx, r.rows); err != nil {
				return err
			}
		}
		win := window.Window{Start: wm, End: wm.Add(time.Minute)}
		pg := cursor.Page{Batch: record.Batch{Source: r.key.Source, Account: r.key.Account, WindowStart: win.Start, WindowEnd: win.End, Page: 0}, After: cursor.Cursor{Watermark: win.End}}
		for j := 0; j < r.rows; j++ {
			pg.Batch.Envelopes = append(pg.Batch.Envelopes, record.Envelope{ID: fmt.Sprint(r.key.Account, "-", i, "-", j),
				Source: r.key.Source, Account: r.key.Account, Time: win.Start, Record: []byte(`{}`)})
		}
		if err := out.Emit(ctx, pg); err != nil {
			return err
		}
		wm = win.End
	}
	return nil
}

// newRoomPipeline builds, inside the caller's bubble, a pipeline whose
// producers are the given roomPollers.
func newRoomPipeline(cfg Config, s *testSink, pollers ...*roomPoller) *Pipeline {
	producers := make([]Producer, len(pollers))
	for i, r := range pollers {
		producers[i] = r
	}
	return New(cfg, &checkpointtest.Store{}, one(s), producers, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
}

// The review's reproduction, scaled down: a 50-record buffer, twelve streams
// reserving room for 5-record pages before each fetch (ten fill the buffer,
// two wait), and a server that sends more than that. A stream that needs
// more room than it reserved must not wait while holding its reservation,
// or every stream ends up holding room and waiting for more, forever.
func TestPagesLargerThanTheirReservationNeverDeadlockAFullBuffer(t *testing.T) {
	for _, tt := range []struct {
		name   string
		rows   int
		regrow bool
	}{
		{name: "emit a page larger than reserved", rows: 6},
		{name: "reserve again for a larger page before emitting it", rows: 6, regrow: true},
		{name: "a page larger than the whole buffer passes alone", rows: 60},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig()
				cfg.BufferRecords = 50
				const streams, pages = 12, 5
				var pollers []*roomPoller
				for i := 0; i < streams; i++ {
					pollers = append(pollers, &roomPoller{key: record.Stream{Source: "dns", Account: fmt.Sprintf("a%02d", i)},
						reserveRows: 5, rows: tt.rows, pages: pages, regrow: tt.regrow, fetch: time.Second})
				}
				s := &testSink{}
				p := newRoomPipeline(cfg, s, pollers...)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- p.Run(ctx) }()
				// Every fetch takes a second of fake time: an hour is a
				// deadlock, and it passes at once when every goroutine of
				// the bubble is blocked.
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(time.Hour):
					stalled := p.Stalled()
					cancel()
					<-done
					t.Fatalf("deadlock: %d of %d records delivered in an hour; Stalled() = %v",
						p.Delivered(), streams*pages*tt.rows, stalled)
				}
				if got, want := p.Delivered(), int64(streams*pages*tt.rows); got != want {
					t.Fatalf("delivered %d records, want %d", got, want)
				}
				if n := p.slots.inUse(); n != 0 {
					t.Fatalf("%d slots still held after Run", n)
				}
			})
		})
	}
}

// A stream that needs more room than it holds and cannot have it at once
// gives back what it holds before it waits, and is then served in turn.
func TestARequestForMoreRoomGivesBackWhatItHoldsWhileItWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSlots(10, time.Now)
		ctx := t.Context()
		a, _ := s.acquire(ctx, 5)
		b, _ := s.acquire(ctx, 5)
		got := make(chan int, 1)
		go func() {
			n, err := s.exchange(ctx, a, 6)
			if err != nil {
				t.Error(err)
			}
			got <- n
		}()
		synctest.Wait()
		if n := s.inUse(); n != b {
			t.Fatalf("%d slots in use while the grower waits, want %d: it waits holding its room", n, b)
		}
		if n, rows, _ := s.waiting(); n != 1 || rows != 6 {
			t.Fatalf("waiting() = %d requests for %d rows, want 1 for 6", n, rows)
		}
		s.release(b)
		if n := <-got; n != 6 || s.inUse() != 6 {
			t.Fatalf("grower holds %d, %d in use; want 6 and 6", n, s.inUse())
		}
		// The difference is taken at once when it is free and nobody waits,
		// and a request larger than the buffer is clamped to it.
		if n, err := s.exchange(ctx, 6, 8); n != 8 || err != nil || s.inUse() != 8 {
			t.Fatalf("exchange(6, 8) = %d, %v with %d in use; want 8, nil, 8", n, err, s.inUse())
		}
		if n, err := s.exchange(ctx, 8, 60); n != 10 || err != nil || s.inUse() != 10 {
			t.Fatalf("exchange(8, 60) = %d, %v with %d in use; want 10, nil, 10", n, err, s.inUse())
		}
		s.release(10)
	})
}

// Streams waiting for room that nothing gives back is a stall even though
// nothing waits in the sink: /healthz must see it.
func TestStalledReportsStreamsWaitingForRoomThatNeverComes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.BufferRecords = 10
		cfg.StallTimeout = time.Minute
		gate := make(chan struct{})
		// a holds the whole buffer while its fetch hangs; b waits for room.
		a := &roomPoller{key: record.Stream{Source: "dns", Account: "a"}, reserveRows: 10, rows: 10, pages: 1, gate: gate}
		b := &roomPoller{key: record.Stream{Source: "dns", Account: "b"}, reserveRows: 5, rows: 5, pages: 1, start: time.Second}
		p := newRoomPipeline(cfg, &testSink{}, a, b)
		done := make(chan error, 1)
		go func() { done <- p.Run(t.Context()) }()
		time.Sleep(b.start)
		synctest.Wait()
		if n, _, _ := p.slots.waiting(); n != 1 || p.pending.Load() != 0 {
			t.Fatalf("setup: %d waiting for room, %d records pending; want 1 and 0", n, p.pending.Load())
		}
		if err := p.Stalled(); err != nil {
			t.Fatalf("stalled as soon as a stream waits: %v", err)
		}
		time.Sleep(cfg.StallTimeout - time.Second)
		if err := p.Stalled(); err != nil {
			t.Fatalf("stalled before StallTimeout: %v", err)
		}
		time.Sleep(2 * time.Second)
		if err := p.Stalled(); err == nil {
			t.Fatal("a stream waited for room past StallTimeout without being reported")
		}
		close(gate) // a's page arrives, is acknowledged and frees b's room
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := p.Stalled(); err != nil {
			t.Fatalf("stalled after everything was written: %v", err)
		}
		if got := p.Delivered(); got != 15 {
			t.Fatalf("delivered %d records, want 15", got)
		}
	})
}

// /readyz reports a sink whose writes fail even if the sink says it is
// ready (a full disk), until a write succeeds again.
func TestWriteErrorReportsTheLastFailedWriteUntilOneSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		enospc := fmt.Errorf("write /var/lib/collector/dns.ndjson: %w", errNoSpace)
		s := &testSink{failN: 2, err: fmt.Errorf("flush batch:\n\t%w\r\nretry later", enospc)}
		cfg := testConfig()
		cfg.SinkWorkers = 1
		cfg.RetryInitial, cfg.RetryMax = time.Second, time.Second
		pl := &scriptedPoller{key: record.Stream{Source: "dns", Account: "acme"}, windows: 1, pages: 1, rows: 3}
		p := New(cfg, &checkpointtest.Store{}, one(s), []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		if err := p.WriteError(); err != nil {
			t.Fatalf("WriteError before any write: %v", err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(t.Context()) }()
		synctest.Wait() // the first write failed; the worker waits to retry
		err := p.WriteError()
		if err == nil {
			t.Fatal("no WriteError after a failed write")
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\n\r\t") || !strings.Contains(msg, "no space left on device") ||
			!strings.Contains(msg, "dns/acme") {
			t.Fatalf("WriteError() = %q, want one line naming the stream and the cause", msg)
		}
		if !errors.Is(err, errNoSpace) {
			t.Fatalf("WriteError() = %v does not wrap the sink's error", err)
		}
		if n := s.writeCalls(); n != 1 {
			t.Fatalf("%d writes after the first failure, want 1", n)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := p.WriteError(); err != nil {
			t.Fatalf("WriteError after a successful write: %v", err)
		}
		if n := s.writeCalls(); n != 3 {
			t.Fatalf("%d writes, want 3 (two failed, one acknowledged)", n)
		}
	})
}

var errNoSpace = errors.New("no space left on device")

func TestOneLineKeepsAnErrorOnOneBoundedLine(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"a one-line message is kept", "sink unavailable", "sink unavailable"},
		{"line breaks and tabs become single spaces", "a:\n\tb\r\n  c", "a: b c"},
		{"a long message is cut on a rune boundary", strings.Repeat("é", maxErrorLen), strings.Repeat("é", maxErrorLen/2) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := oneLine(tt.in); got != tt.want {
				t.Fatalf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
