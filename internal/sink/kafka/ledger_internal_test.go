package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
	"github.com/svcexport/collector/internal/sink/sinktest"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// newLedgerSink is a Sink with only its ledger, for the ledger's own
// bookkeeping (no cluster).
func newLedgerSink() *Sink {
	cfg := DefaultConfig()
	return &Sink{cfg: cfg, led: kledger{end: map[tp]int64{},
		cov: sinkhelper.NewCoverage(), landed: map[landedKey]map[string]struct{}{}}}
}

// decodeMark returns a mark's offsets by partition.
func decodeMark(t *testing.T, mark []byte) map[tp]int64 {
	t.Helper()
	var m kafkaMark
	if err := json.Unmarshal(mark, &m); err != nil {
		t.Fatal(err)
	}
	out := map[tp]int64{}
	for i, p := range m.Partitions {
		out[p] = m.Offsets[i]
	}
	return out
}

// A batch handed while a partition of its topic was unknown to the sink
// (a partition added while it runs) may have landed anywhere in it: until
// a commit covers the batch, the mark reads that partition from 0, not
// from the end produced since (issue 29). The partitions it knew keep
// the ends it knew then.
func TestMarkReadsAPartitionUnknownWhenABatchWasHandedFromZero(t *testing.T) {
	t.Parallel()
	s := newLedgerSink()
	acme := record.Stream{Source: "dns", Account: "acme"}
	p0, p1, p2 := tp{"svc.dns", 0}, tp{"svc.dns", 1}, tp{"svc.dns", 2}
	other := tp{"svc.connections", 0}
	s.led.end = map[tp]int64{p0: 40, p1: 50, other: 70}

	b := &record.Batch{Source: "dns", Account: "acme", Seq: 3}
	s.noteHanded(b, []string{"svc.dns", "svc.dns"})
	// Its records, and a later batch's, land on p2 too, which the sink
	// learns of by the acknowledgements only.
	stored := func(p tp, offsets ...int64) kgo.ProduceResults {
		var rs kgo.ProduceResults
		for _, o := range offsets {
			rs = append(rs, kgo.ProduceResult{Record: &kgo.Record{Topic: p.Topic, Partition: p.Partition, Offset: o}})
		}
		return rs
	}
	s.noteStored(append(stored(p0, 40, 41), stored(p2, 8, 9)...))
	s.noteStored(append(stored(p2, 10, 11), stored(other, 70)...))

	mark, err := s.Mark(context.Background(), map[record.Stream]uint64{acme: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := decodeMark(t, mark)
	want := map[tp]int64{p0: 40, p1: 50, p2: 0, other: 70}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("mark with batch 3 uncovered: %v, want %v", got, want)
	}

	// Covered, the batch no longer holds the mark back.
	mark, err = s.Mark(context.Background(), map[record.Stream]uint64{acme: 4})
	if err != nil {
		t.Fatal(err)
	}
	got = decodeMark(t, mark)
	want = map[tp]int64{p0: 42, p1: 50, p2: 12, other: 71}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("mark with batch 3 covered: %v, want %v", got, want)
	}
}

// A partition of a marked topic that the mark does not name was added
// after the mark: the dead process may have written there, so Recover
// reads it from its first offset, and the uncovered records it holds are
// not written again.
func TestRecoverReadsAPartitionAddedAfterTheMarkFromZero(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(3, "svc.dns"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acme := record.Stream{Source: "dns", Account: "acme"}
	start := func() *Sink { return startLedgerSink(ctx, t, c, acme) }
	s1 := start()
	if _, err := s1.Recover(ctx, nil); err != nil {
		t.Fatal(err)
	}
	b := dnsBatch("acme", 0, 0, 60)
	if err := s1.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	mark, err := s1.Mark(ctx, map[record.Stream]uint64{acme: 0})
	if err != nil {
		t.Fatal(err)
	}
	// The mark as a process that never knew partition 2 would have left it.
	var m kafkaMark
	if err := json.Unmarshal(mark, &m); err != nil {
		t.Fatal(err)
	}
	i := slices.Index(m.Partitions, tp{"svc.dns", 2})
	m.Partitions, m.Offsets = slices.Delete(m.Partitions, i, i+1), slices.Delete(m.Offsets, i, i+1)
	if mark, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}

	got, err := start().Recover(ctx, mark)
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	held := sinktest.HeldCount(got, acme)
	for _, e := range b.Envelopes {
		if held[cursor.DeliveredOf(e.ID, e.Time)] != 1 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d uncovered records not read back (those of partition 2, which the mark did not name)", missing, len(b.Envelopes))
	}
}

// startLedgerSink starts a sink of streams on c, shut down when t ends.
func startLedgerSink(ctx context.Context, t *testing.T, c *kfake.Cluster, streams ...record.Stream) *Sink {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Brokers = c.ListenAddrs()
	s, err := New(cfg, streams, t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		if err := s.Shutdown(sctx); err != nil {
			t.Error(err)
		}
	})
	return s
}

// dnsBatch is a batch of n dns records of account from record first on.
func dnsBatch(account string, seq uint64, first, n int) *record.Batch {
	var bld record.Builder
	b := &record.Batch{Source: "dns", Account: account, Seq: seq}
	for i := first; i < first+n; i++ {
		e, _ := bld.Build("dns", account, "t", time.Unix(0, 0), time.Unix(3600, 0), time.Unix(4000, 0),
			fmt.Appendf(nil, `{"t":%d,"fqdn":"h%d.example"}`, 1000*i, i))
		b.Envelopes = append(b.Envelopes, e)
	}
	return b
}

// A topic first met by Write (a stream New was not told of) has its ends
// listed before its first batch is handed, so the mark starts at what the
// topic held then, not at 0 (which would be safe, but would read the
// topic's whole history back after a crash).
func TestATopicFirstMetByWriteIsMarkedFromItsEnds(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(2, "svc.dns.acme", "svc.dns.beta"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acme, beta := record.Stream{Source: "dns", Account: "acme"}, record.Stream{Source: "dns", Account: "beta"}
	cfg := DefaultConfig()
	cfg.Brokers, cfg.Topic = c.ListenAddrs(), "svc.{source}.{account}"
	history, err := New(cfg, []record.Stream{beta}, t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := history.Write(ctx, dnsBatch("beta", 0, 0, 50)); err != nil {
		t.Fatal(err)
	}
	ends, err := history.adm.ListEndOffsets(ctx, "svc.dns.beta")
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	s := func() *Sink {
		s, err := New(cfg, []record.Stream{acme}, t.TempDir(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
		return s
	}()
	if _, err := s.Recover(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, dnsBatch("beta", 0, 50, 40)); err != nil {
		t.Fatal(err)
	}
	mark, err := s.Mark(ctx, map[record.Stream]uint64{beta: 0})
	if err != nil {
		t.Fatal(err)
	}
	got := decodeMark(t, mark)
	for p := range int32(2) {
		o, _ := ends.Lookup("svc.dns.beta", p)
		if at, ok := got[tp{"svc.dns.beta", p}]; !ok || at != o.Offset || at == 0 {
			t.Errorf("svc.dns.beta/%d marked at %d (%v), want its end before the batch, %d", p, at, ok, o.Offset)
		}
	}
}

// A batch's ledger entry keeps the distinct topics of its records until a
// commit covers it, in a slice of their own: not the one-a-record slice
// push builds, which cost 16 bytes a record of every uncovered batch.
func TestAHandedBatchKeepsItsDistinctTopicsOnly(t *testing.T) {
	t.Parallel()
	topics := make([]string, 5000)
	for i := range topics {
		topics[i] = "svc.dns"
		if i%1000 >= 600 {
			topics[i] = "svc.connections"
		}
	}
	ts := distinctTopics(topics)
	if want := []string{"svc.connections", "svc.dns"}; !slices.Equal(ts, want) {
		t.Fatalf("topics %v, want %v", ts, want)
	}
	if cap(ts) > 2 {
		t.Fatalf("the %d topics keep a slice of %d (%d bytes) until the commit", len(ts), cap(ts), cap(ts)*16)
	}
}
