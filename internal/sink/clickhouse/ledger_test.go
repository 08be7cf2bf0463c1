package clickhouse

import (
	"context"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinktest"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// After a crash Recover returns the ids of the rows inserted past the
// checkpoint's mark (the batches it does not cover), and none of the
// batches it covers; at_least_once keeps no ledger.
func TestRecoverReadsBackTheRowsInsertedPastTheMark(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			testRecoverReadsBack(t, proto)
		})
	}
}

func testRecoverReadsBack(t *testing.T, proto string) {
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	cfg := testConfig(srv, proto, db)
	s, _ := startSink(t, cfg)
	t.Logf("clock skew to the server: %v", s.led.skew)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.Delivery() != sink.DeliveryExactlyOnce {
		t.Fatalf("default delivery on one server: %q", s.Delivery())
	}
	k := record.Stream{Source: "dns", Account: "acme"}
	d := generate(t, "dns", 300, testBase)
	var bs []*record.Batch
	for i := range 3 {
		b := batchOf("dns", "acme", d.envs[i*100:(i+1)*100], i)
		b.Seq = uint64(i)
		bs = append(bs, b)
	}
	if err := s.Write(ctx, bs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Mark(ctx, map[record.Stream]uint64{k: 1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * markSlack) // past the slack: the covered batch is before the mark
	mark, err := s.Mark(ctx, map[record.Stream]uint64{k: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs[1:] {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}

	s2, _ := startSink(t, cfg)
	got, err := s2.Recover(ctx, mark)
	if err != nil {
		t.Fatal(err)
	}
	held := sinktest.HeldCount(got, k)
	for _, b := range bs[1:] {
		for _, e := range b.Envelopes {
			if n := held[cursor.DeliveredOf(e.ID, e.Time)]; n != 1 {
				t.Fatalf("id %s inserted past the mark read back %d times under its key, want once (%d keys read back)", e.ID, n, len(got[k]))
			}
		}
	}
	for _, e := range bs[0].Envelopes {
		if held[cursor.DeliveredOf(e.ID, e.Time)] > 0 {
			t.Fatalf("id %s of the covered batch read back", e.ID)
		}
	}

	cfg.Delivery = sink.DeliveryAtLeastOnce
	s3, _ := startSink(t, cfg)
	if m, err := s3.Mark(ctx, nil); err != nil || m != nil {
		t.Fatalf("at_least_once mark %q, %v", m, err)
	}
	cfg.Cluster, cfg.Delivery = "c", sink.DeliveryExactlyOnce
	if err := cfg.Validate(); err == nil {
		t.Errorf("exactly_once with a cluster passed Validate")
	}
}
