package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/checkpoint/checkpointtest"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

var errSchema = errors.New("column fqdn: value too long for the table's type")

// refusingSink refuses, for good, the batch of one stream whose window
// starts at refuse, and writes every other; it counts the writes asked of
// it per stream and window start.
type refusingSink struct {
	testSink
	stream record.Stream
	refuse time.Time

	mu    sync.Mutex
	asked map[record.Stream][]time.Time
}

func (s *refusingSink) Write(ctx context.Context, b *record.Batch) error {
	k := record.Stream{Source: b.Source, Account: b.Account}
	s.mu.Lock()
	if s.asked == nil {
		s.asked = map[record.Stream][]time.Time{}
	}
	s.asked[k] = append(s.asked[k], b.WindowStart)
	s.mu.Unlock()
	if k == s.stream && b.WindowStart.Equal(s.refuse) {
		return sink.Permanent(errSchema)
	}
	return s.testSink.Write(ctx, b)
}

func (s *refusingSink) writes(k record.Stream) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.asked[k]...)
}

// A batch the sink refuses for good is not retried: its stream stops (its
// producer's context ends, its failure is stated and counted), nothing of
// it or after it is acknowledged, and the other streams go on. Run, once
// every producer returned, fails naming the stream.
func TestAPermanentSinkErrorStopsItsStreamOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := record.Stream{Source: "dns", Account: "bad"}
		good := record.Stream{Source: "dns", Account: "good"}
		s := &refusingSink{stream: bad, refuse: t0.Add(time.Hour)} // the second window of bad
		store := &checkpointtest.Store{}
		cfg := testConfig()
		cfg.SinkWorkers = 1 // in order: the refused batch is written after the first and before the rest
		// bad tails: only the cancellation of its context ends its Run.
		badPoller := &scriptedPoller{key: bad, windows: 5, pages: 1, rows: 10, tail: true}
		goodPoller := &scriptedPoller{key: good, windows: 5, pages: 1, rows: 10}
		p := New(cfg, store, one(s), []Producer{badPoller, goodPoller}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)

		done := make(chan error, 1)
		go func() { done <- p.Run(t.Context()) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Hour):
			t.Fatal("Run did not end: the stopped stream's producer was not cancelled")
		}
		if err == nil || !strings.Contains(err.Error(), "stream dns/bad stopped") || !errors.Is(err, errSchema) || !sink.IsPermanent(err) {
			t.Fatalf("Run = %v, want an error naming dns/bad and wrapping the sink's permanent error", err)
		}
		if strings.Contains(err.Error(), "dns/good") {
			t.Fatalf("Run = %v names the stream that went on", err)
		}

		if got := s.writes(bad); len(got) != 2 || !got[1].Equal(s.refuse) {
			t.Fatalf("writes of dns/bad for windows %v, want the first and the refused one, once each", got)
		}
		all, _ := store.All(t.Context())
		if st := all[bad]; !st.Watermark.Equal(t0.Add(time.Hour)) || st.Delivered != 10 {
			t.Fatalf("dns/bad committed %+v, want the first window only (watermark %s, 10 rows)", st, t0.Add(time.Hour))
		}
		for _, c := range store.Commits() {
			if st, ok := c[bad]; ok && st.Watermark.After(t0.Add(time.Hour)) {
				t.Fatalf("a commit moved dns/bad past the refused batch: %+v", st)
			}
		}
		if st := all[good]; !st.Watermark.Equal(t0.Add(5*time.Hour)) || st.Delivered != 50 {
			t.Fatalf("dns/good committed %+v, want all five windows", st)
		}

		fs := p.Failures()
		if len(fs) != 1 || !errors.Is(fs[bad], errSchema) {
			t.Fatalf("Failures() = %v, want dns/bad only", fs)
		}
		for _, tt := range []struct {
			name string
			c    prometheus.Collector
			want float64
		}{
			{"stream_failed of dns/bad", p.m.streamFailed.WithLabelValues("dns", "bad"), 1},
			{"stream_failed of dns/good", p.m.streamFailed.WithLabelValues("dns", "good"), 0},
			{"sink_permanent_errors of dns/bad", p.m.permanentErrors.WithLabelValues("dns", "bad", "test"), 1},
			{"sink_permanent_errors of dns/good", p.m.permanentErrors.WithLabelValues("dns", "good", "test"), 0},
		} {
			if got := testutil.ToFloat64(tt.c); got != tt.want {
				t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
			}
		}
		if n := p.slots.inUse(); n != 0 {
			t.Fatalf("%d slots still held after Run", n)
		}
	})
}

// Pages of a stopped stream that finish writing after it stopped are not
// acknowledged either: the tracker ignores them.
func TestTheTrackerIgnoresAcknowledgementsOfAFailedStream(t *testing.T) {
	k := record.Stream{Source: "dns", Account: "bad"}
	tr := newTracker(nil)
	for range 3 {
		tr.next(k)
	}
	tr.ack(k, 1, ackedPage{after: cursorAt(2)}, t0) // waits for page 0
	tr.fail(k)
	tr.ack(k, 0, ackedPage{after: cursorAt(1)}, t0)
	tr.ack(k, 2, ackedPage{after: cursorAt(3)}, t0)
	if st := tr.states()[k]; !st.Watermark.IsZero() {
		t.Fatalf("a failed stream moved to %+v", st)
	}
	if d := tr.takeDirty(); len(d) != 0 {
		t.Fatalf("a failed stream has states to commit: %v", d)
	}
}

// cursorAt is the cursor after window h (one-hour windows from t0).
func cursorAt(h int) cursor.Cursor {
	return cursor.Cursor{Watermark: t0.Add(time.Duration(h) * time.Hour)}
}
