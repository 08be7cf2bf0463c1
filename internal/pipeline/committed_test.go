package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// committedSink is a testSink that hears of commits (sink.CommitObserver)
// and checks that every seq it is told is committed was acknowledged.
type committedSink struct {
	testSink
	mu2   sync.Mutex
	acked map[record.Stream]map[uint64]bool
	next  map[record.Stream]uint64
	bad   []string
}

var _ sink.CommitObserver = (*committedSink)(nil)

func (c *committedSink) Write(ctx context.Context, b *record.Batch) error {
	if err := c.testSink.Write(ctx, b); err != nil {
		return err
	}
	c.mu2.Lock()
	defer c.mu2.Unlock()
	k := record.Stream{Source: b.Source, Account: b.Account}
	if c.acked[k] == nil {
		c.acked[k] = map[uint64]bool{}
	}
	c.acked[k][b.Seq] = true
	return nil
}

func (c *committedSink) Committed(k record.Stream, next uint64) {
	c.mu2.Lock()
	defer c.mu2.Unlock()
	for seq := c.next[k]; seq < next; seq++ {
		if !c.acked[k][seq] {
			c.bad = append(c.bad, k.String())
		}
	}
	c.next[k] = max(c.next[k], next)
}

// After every commit a sink that asks is told, per stream, the seq below
// which every page is committed; it never covers a page the sink did not
// acknowledge, and at the end it covers them all (file retention waits
// for it).
func TestASinkIsToldWhatTheCheckpointCommitted(t *testing.T) {
	db := openStore(t)
	s := &committedSink{testSink: testSink{failN: 3}, acked: map[record.Stream]map[uint64]bool{}, next: map[record.Stream]uint64{}}
	k := record.Stream{Source: "dns", Account: "acme"}
	p := New(testConfig(), db, one(s), []Producer{&scriptedPoller{key: k, windows: 5, pages: 3, rows: 10}},
		prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(s.bad) > 0 {
		t.Errorf("told committed before acknowledged: %v", s.bad)
	}
	if s.next[k] != 15 {
		t.Errorf("told committed below seq %d, want 15 (every page)", s.next[k])
	}
}
