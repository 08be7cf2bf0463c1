package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/checkpoint/checkpointtest"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/source"
)

// tickingPoller emits a page of one record a second, one minute of data
// each, until it is stopped: a stream that keeps fetching.
type tickingPoller struct {
	key     record.Stream
	starts  atomic.Int64
	emitted atomic.Int64
}

func (s *tickingPoller) Stream() record.Stream   { return s.key }
func (*tickingPoller) Learner() recheck.Observer { return nil }

func (s *tickingPoller) Run(ctx context.Context, from cursor.Cursor, out source.Output) error {
	s.starts.Add(1)
	wm := from.Watermark
	if wm.IsZero() {
		wm = t0
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		raw := fmt.Sprintf(`{"createdTime":%q}`, wm.Format(time.RFC3339))
		id, _ := record.ID(s.key.Source, []byte(raw))
		pg := cursor.Page{Batch: record.Batch{Source: s.key.Source, Account: s.key.Account, WindowStart: wm, WindowEnd: wm.Add(time.Minute),
			Envelopes: []record.Envelope{{ID: id, Source: s.key.Source, Account: s.key.Account, Time: wm, Record: []byte(raw)}}},
			After: cursor.Cursor{Watermark: wm.Add(time.Minute)}}
		if err := out.Emit(ctx, pg); err != nil {
			return err
		}
		s.emitted.Add(1)
		wm = wm.Add(time.Minute)
	}
}

// A reload changes the producers of a running pipeline (issue 33 item 1):
// an added stream starts, a removed one stops once its pages are
// committed (its state stays), a changed one restarts alone from its
// committed state, and a stream the reload does not touch keeps fetching
// all along, never restarted.
func TestProducersAddedRemovedAndRestartedWhileAnotherGoesOn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		addedKey := record.Stream{Source: "dns", Account: "acme-dev"}
		// The added stream's pages take 2 s each to write: Remove waits.
		s := &testSink{delay: func(b *record.Batch) time.Duration {
			if b.Account == addedKey.Account {
				return 2 * time.Second
			}
			return 0
		}}
		untouched := &tickingPoller{key: record.Stream{Source: "dns", Account: "acme"}}
		changedKey := record.Stream{Source: "audit_logs", Account: "acme"}
		changed := &scriptedPoller{key: changedKey, windows: 2, pages: 1, rows: 5, tail: true}
		p := New(testConfig(), store, one(s), []Producer{untouched, changed}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		begin := time.Now()
		go func() { done <- p.Run(ctx) }()
		time.Sleep(3 * time.Second)
		synctest.Wait()

		// Added: starts from nothing and delivers.
		added := &scriptedPoller{key: addedKey, windows: 3, pages: 2, rows: 4, tail: true}
		if err := p.Add(t.Context(), added); err != nil {
			t.Fatal(err)
		}
		if err := p.Add(t.Context(), &scriptedPoller{key: addedKey}); err == nil {
			t.Error("a stream added twice runs twice")
		}
		synctest.Wait()
		if got := p.Streams(); len(got) != 3 {
			t.Errorf("streams running after Add: %v", got)
		}

		// Removed: returns once what it emitted is committed.
		if err := p.Remove(t.Context(), addedKey); err != nil {
			t.Fatal(err)
		}
		st, ok, _ := store.Load(t.Context(), addedKey)
		if !ok || !st.Watermark.Equal(t0.Add(3*time.Hour)) || st.Delivered != 24 {
			t.Errorf("removed stream's committed state %+v (stored %v), want its 3 windows and 24 records", st, ok)
		}
		if err := p.Remove(t.Context(), addedKey); err == nil {
			t.Error("a stream removed twice: no error")
		}

		// Changed: restarts alone, from its committed state.
		started := make(chan cursor.Cursor, 1)
		again := &scriptedPoller{key: changedKey, windows: 1, pages: 1, rows: 1, tail: true, started: started}
		if err := p.Restart(t.Context(), again); err != nil {
			t.Fatal(err)
		}
		if c := <-started; !c.Watermark.Equal(t0.Add(2 * time.Hour)) {
			t.Errorf("the restarted stream resumed from %+v, want its committed watermark %v", c, t0.Add(2*time.Hour))
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		ran := time.Since(begin)
		emitted := untouched.emitted.Load()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := untouched.starts.Load(); n != 1 {
			t.Errorf("the untouched stream started %d times, want once", n)
		}
		// One page a second, whatever the changes around it: no pause.
		if want := int64(ran / time.Second); emitted != want {
			t.Errorf("the untouched stream emitted %d pages in %v, want %d: it paused", emitted, ran, want)
		}
		st, _, _ = store.Load(context.Background(), changedKey)
		if !st.Watermark.Equal(t0.Add(3*time.Hour)) || st.Delivered != 11 {
			t.Errorf("restarted stream's committed state %+v, want 3 windows and 11 records", st)
		}
		if err := p.Add(context.Background(), added); err == nil {
			t.Error("Add after Run ended: no error")
		}
	})
}

// A stream a sink refused for good stays stopped until a restart: a
// reload does not add it back (its pages could not be committed).
func TestAStreamStoppedForGoodIsNotAddedBack(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := &checkpointtest.Store{}
		refused := errors.New("refused")
		s := &testSink{failN: 1, err: sink.Permanent(refused)}
		key := record.Stream{Source: "dns", Account: "acme"}
		other := &tickingPoller{key: record.Stream{Source: "dns", Account: "other"}}
		p := New(testConfig(), store, one(s), []Producer{other, &scriptedPoller{key: key, windows: 1, pages: 1, rows: 1, tail: true}},
			prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- p.Run(ctx) }()
		synctest.Wait()
		if err := p.Restart(t.Context(), &scriptedPoller{key: key, windows: 1, pages: 1, rows: 1, tail: true}); err == nil {
			t.Error("a stream stopped for good was restarted")
		}
		cancel()
		if err := <-done; !errors.Is(err, refused) {
			t.Errorf("Run: %v, want the refusal", err)
		}
	})
}
