package pipeline

import (
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/checkpoint/checkpointtest"
	"github.com/svcexport/collector/internal/record"
)

// OnAcknowledged (the tap) sees a page only once every sink acknowledged it,
// each record once, and never a page a sink still holds: what a tap shows
// is what every destination has.
func TestOnAcknowledgedSeesEveryRecordOnceEverySinkHasIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast, slow := &testSink{}, &testSink{hold: make(chan struct{})}
		key := record.Stream{Source: "dns", Account: "acme"}
		cfg := testConfig()
		cfg.SinkWorkers = 2
		pl := &scriptedPoller{key: key, windows: 6, pages: 2, rows: 40}
		p := New(cfg, &checkpointtest.Store{}, two(fast, slow), []Producer{pl}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler), nil)
		var mu sync.Mutex
		seen := map[string]int{}
		p.OnAcknowledged(func(b *record.Batch) {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range b.Envelopes {
				if b.Source != key.Source || b.Account != key.Account || e.Source != key.Source {
					t.Errorf("delivered a batch of %s/%s holding %s", b.Source, b.Account, e.Source)
				}
				seen[e.ID]++
			}
		})
		done := make(chan error)
		go func() { done <- p.Run(t.Context()) }()

		synctest.Wait() // the fast sink wrote; the slow one holds its writes
		mu.Lock()
		if fast.written() == 0 || len(seen) != 0 {
			t.Errorf("fast sink wrote %d, the slow none; OnAcknowledged saw %d records, want none", fast.written(), len(seen))
		}
		mu.Unlock()
		close(slow.hold)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(seen) != 480 || slow.written() != 480 {
			t.Fatalf("OnAcknowledged saw %d records, the slow sink holds %d; want all 480", len(seen), slow.written())
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("record %s seen %d times", id, n)
			}
		}
	})
}
