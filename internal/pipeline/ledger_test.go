package pipeline

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// A sink's skip set leaves each id out once, also under the record's own
// account (edge streams, C6); an id stays in what the checkpoint keeps
// until the page that left it out is committed, and the kept set is stored
// again once it shrank (at most every remainPersistEvery), and at once when
// it became empty.
func TestASkipSetIsKeptUntilThePagesThatUsedItAreCommitted(t *testing.T) {
	t.Parallel()
	k := record.Stream{Source: "edge_alerts", Account: "edge"}
	own := record.Stream{Source: "edge_alerts", Account: "acme"}
	m := newMetrics(prometheus.NewRegistry(), &Pipeline{})
	tg := newTarget(Target{Name: "siem"}, m, 1)
	stored := sink.Stored{k: {"a": {}, "b": {}}, own: {"c": {}}}
	tg.skip = stored
	if err := decodeStored(encodeStored(stored), sink.Stored{}); err != nil {
		t.Fatal(err)
	}
	tg.remain = sink.Stored{}
	if err := decodeStored(encodeStored(stored), tg.remain); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	tg.persisted = now

	b := &record.Batch{Source: "edge_alerts", Account: "edge", Seq: 3, Envelopes: []record.Envelope{
		{ID: "a", Account: "edge"}, {ID: "c", Account: "acme"}, {ID: "d", Account: "acme"}}}
	got := tg.unstored(b)
	if got == nil || len(got.Envelopes) != 1 || got.Envelopes[0].ID != "d" || len(b.Envelopes) != 3 {
		t.Fatalf("unstored: %+v (the shared batch: %d records)", got, len(b.Envelopes))
	}
	if again := tg.unstored(b); again != b {
		t.Fatalf("a second copy of the batch: %+v; want it whole (each id is left out once)", again)
	}
	// Not committed yet: nothing resolved.
	if _, ok := tg.resolve(map[record.Stream]uint64{k: 3}, now.Add(time.Minute)); ok || len(tg.remain[k]) != 2 || len(tg.remain[own]) != 1 {
		t.Fatalf("resolved before page 3 was committed: %v", tg.remain)
	}
	// Committed: a and c are resolved; stored again (a minute since).
	r, ok := tg.resolve(map[record.Stream]uint64{k: 4}, now.Add(time.Minute))
	if !ok {
		t.Fatal("the shrunk set was not stored")
	}
	kept := sink.Stored{}
	if err := decodeStored(r, kept); err != nil {
		t.Fatal(err)
	}
	if _, ok := kept[k]["b"]; !ok || len(kept[k]) != 1 || len(kept[own]) != 0 {
		t.Fatalf("kept %v, want only b", kept)
	}
}
