package pipeline

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// A sink's held set leaves each record out as many times as the sink
// holds it (a record stored once is left out once), also under the
// record's own account (edge streams, C6), and the shared batch is never
// changed (CONTRACT C7: each record once in each sink).
func TestAHeldSetLeavesEachRecordOutOncePerCopyHeld(t *testing.T) {
	t.Parallel()
	k := record.Stream{Source: "edge_alerts", Account: "edge"}
	own := record.Stream{Source: "edge_alerts", Account: "acme"}
	m := newMetrics(prometheus.NewRegistry(), &Pipeline{})
	tg := newTarget(Target{Name: "siem"}, m, 1)
	at := time.Unix(1_800_000_000, 0)
	key := func(id string) cursor.Delivered { return cursor.DeliveredOf(id, at) }
	if n := tg.hold(sink.Held{k: {key("a"), key("b"), key("b")}, own: {key("c")}}); n != 4 {
		t.Fatalf("hold took %d entries, want 4", n)
	}

	b := &record.Batch{Source: "edge_alerts", Account: "edge", Seq: 3, Envelopes: []record.Envelope{
		{ID: "a", Account: "edge", Time: at}, {ID: "b", Account: "edge", Time: at}, {ID: "c", Account: "acme", Time: at}, {ID: "d", Account: "acme", Time: at}}}
	got := tg.unstored(b)
	if got == nil || len(got.Envelopes) != 1 || got.Envelopes[0].ID != "d" || len(b.Envelopes) != 4 {
		t.Fatalf("unstored: %+v (the shared batch: %d records)", got, len(b.Envelopes))
	}
	// b is held twice: its second copy is left out too, the others not.
	again := tg.unstored(b)
	if again == nil || len(again.Envelopes) != 3 || again.Envelopes[0].ID != "a" || again.Envelopes[1].ID != "c" {
		t.Fatalf("a second copy of the batch: %+v; want it without b only", again)
	}
	if third := tg.unstored(b); third != b {
		t.Fatalf("a third copy of the batch: %+v; want it whole (nothing left held)", third)
	}
}
