package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// After a crash, Recover reads back what the partitions hold past the
// checkpoint's mark: exactly the ids of the batches the mark does not
// cover (of every stream), none before it; without a mark, none.
func TestRecoverReadsBackWhatThePartitionsHoldPastTheMark(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(3, "svc.dns"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acme, beta := record.Stream{Source: "dns", Account: "acme"}, record.Stream{Source: "dns", Account: "beta"}
	streams := []record.Stream{acme, beta}

	s, _ := startSink(t, testConfig(c), streams, prometheus.NewRegistry())
	if got, err := s.Recover(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("Recover without a mark: %v, %v; want nothing", got, err)
	}
	var bs []*record.Batch
	for i := range 6 {
		b := makeBatch(t, "dns", "acme", i, i*50, 50, 20)
		b.Seq = uint64(i)
		bs = append(bs, b)
		write(t, s, b)
	}
	other := makeBatch(t, "dns", "beta", 0, 0, 30, 20)
	write(t, s, other) // beta's batch 0: never covered
	mark, err := s.Mark(ctx, map[record.Stream]uint64{acme: 4})
	if err != nil {
		t.Fatal(err)
	}
	if s.Delivery() != sink.DeliveryExactlyOnce {
		t.Fatalf("default delivery %q", s.Delivery())
	}

	// The next start: a new sink on the same cluster.
	s2, _ := startSink(t, testConfig(c), streams, prometheus.NewRegistry())
	got, err := s2.Recover(ctx, mark)
	if err != nil {
		t.Fatal(err)
	}
	want := map[record.Stream]map[string]bool{acme: {}, beta: {}}
	for _, b := range append(bs[4:], other) {
		for _, e := range b.Envelopes {
			want[record.Stream{Source: b.Source, Account: b.Account}][e.ID] = true
		}
	}
	for k, ids := range want {
		for id := range ids {
			if _, ok := got[k][id]; !ok {
				t.Errorf("%s: id %s of an uncovered batch not read back", k, id)
				break
			}
		}
	}
	for _, b := range bs[:4] {
		for _, e := range b.Envelopes {
			if _, ok := got[acme][e.ID]; ok {
				t.Fatalf("id %s of a covered batch read back", e.ID)
			}
		}
	}
	t.Logf("read back %d + %d ids past the mark", len(got[acme]), len(got[beta]))
}

// at_least_once has no ledger: no mark, nothing read back.
func TestAtLeastOnceKafkaReadsNothingBack(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.dns"))
	cfg := testConfig(c)
	cfg.Delivery = sink.DeliveryAtLeastOnce
	acme := record.Stream{Source: "dns", Account: "acme"}
	s, _ := startSink(t, cfg, []record.Stream{acme}, prometheus.NewRegistry())
	write(t, s, makeBatch(t, "dns", "acme", 0, 0, 10, 20))
	mark, err := s.Mark(context.Background(), map[record.Stream]uint64{acme: 0})
	if err != nil || mark != nil {
		t.Fatalf("mark %q, %v; want none", mark, err)
	}
	if got, err := s.Recover(context.Background(), []byte(`{"v":1}`)); err != nil || got != nil {
		t.Fatalf("Recover: %v, %v; want nothing", got, err)
	}
}
