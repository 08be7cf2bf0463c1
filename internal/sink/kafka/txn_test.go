package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// readAll reads every partition of topic from the start with the given
// isolation until nothing comes for a second.
func readAll(t *testing.T, c *kfake.Cluster, topic string, iso kgo.IsolationLevel, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Until want records came (a first fetch can take seconds on a busy
	// machine, so a quiet poll does not mean the end), then until a poll
	// brings nothing more: a count past want is the caller's to judge.
	deadline := time.Now().Add(30 * time.Second)
	var out []*kgo.Record
	for {
		wait := 500 * time.Millisecond
		if len(out) < want {
			wait = time.Until(deadline)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		fs := cl.PollFetches(ctx)
		cancel()
		out = append(out, fs.Records()...)
		if fs.NumRecords() == 0 && ctx.Err() != nil {
			if len(out) < want {
				t.Fatalf("read %d records of %s in 30s, want at least %d", len(out), topic, want)
			}
			return out
		}
	}
}

// With sink.kafka.transactional_id each Write is one committed
// transaction. A process that dies mid-transaction leaves records that a
// read_committed consumer never sees; the next start's Recover fences the
// id (the zombie can commit nothing more) and returns exactly the ids of
// the committed batches past the mark.
func TestTransactionalWritesCrashAndRecoverFences(t *testing.T) {
	t.Parallel()
	const topic = "svc.dns"
	c := kafkatest.NewCluster(t, kfake.SeedTopics(3, topic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acme := record.Stream{Source: "dns", Account: "acme"}
	cfg := testConfig(c)
	cfg.TransactionalID = "collector-test-" + t.Name()

	reg := prometheus.NewRegistry()
	s, _ := startSink(t, cfg, []record.Stream{acme}, reg)
	if _, err := s.Recover(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var bs []*record.Batch
	for i := range 4 {
		b := makeBatch(t, "dns", "acme", i, i*40, 40, 20)
		b.Seq = uint64(i)
		bs = append(bs, b)
		write(t, s, b)
	}
	if got := gather(t, reg)["collector_kafka_transactions_committed_total{}"]; got != 4 {
		t.Fatalf("transactions committed %v, want 4 (one per Write)", got)
	}
	mark, err := s.Mark(ctx, map[record.Stream]uint64{acme: 2}) // batches 0, 1 covered
	if err != nil {
		t.Fatal(err)
	}

	// The crash: the same process's producer (its transactional id) opens
	// a transaction, produces copies of batch 3's records under new ids
	// and with its batch header, and dies before the commit.
	committed := readAll(t, c, topic, kgo.ReadCommitted(), 4*40)
	zombie, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID(cfg.TransactionalID))
	if err != nil {
		t.Fatal(err)
	}
	defer zombie.Close()
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	crashIDs := map[string]bool{}
	for i, r := range committed {
		id := fmt.Sprintf("crash-%d", i)
		crashIDs[id] = true
		cp := &kgo.Record{Topic: topic, Partition: r.Partition, Key: []byte(id), Value: r.Value, Headers: r.Headers}
		if err := zombie.ProduceSync(ctx, cp).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Written (read_uncommitted sees them) but not visible to read_committed.
	if n := countIDs(readAll(t, c, topic, kgo.ReadUncommitted(), 2*len(committed)), crashIDs); n != len(crashIDs) {
		t.Fatalf("read_uncommitted sees %d of the %d records of the open transaction", n, len(crashIDs))
	}

	// The next start.
	s2, _ := startSink(t, cfg, []record.Stream{acme}, prometheus.NewRegistry())
	began := time.Now()
	got, err := s2.Recover(ctx, mark)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fence and read back %d ids in %v", len(got[acme]), time.Since(began).Round(time.Millisecond))
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the zombie committed its transaction after the next start's Recover: the id was not fenced")
	}
	want := map[cursor.Delivered]bool{}
	for _, b := range bs[2:] {
		for _, e := range b.Envelopes {
			want[cursor.DeliveredOf(e.ID, e.Time)] = true
		}
	}
	if len(got[acme]) != len(want) {
		t.Errorf("read back %d keys, want %d (batches 2 and 3)", len(got[acme]), len(want))
	}
	for _, key := range got[acme] {
		if !want[key] {
			t.Errorf("read back key %v: not of a committed batch past the mark", key)
		}
	}
	after := readAll(t, c, topic, kgo.ReadCommitted(), len(committed))
	if n := countIDs(after, crashIDs); n != 0 {
		t.Fatalf("read_committed sees %d records of the crashed transaction", n)
	}
	if len(after) != len(committed) {
		t.Fatalf("read_committed sees %d records, want the %d committed", len(after), len(committed))
	}
	// The new producer writes on (its own epoch).
	b := makeBatch(t, "dns", "acme", 4, 160, 10, 20)
	b.Seq = 4
	write(t, s2, b)
	if n := len(readAll(t, c, topic, kgo.ReadCommitted(), len(committed)+10)); n != len(committed)+10 {
		t.Fatalf("after a Write of the new start read_committed sees %d records, want %d", n, len(committed)+10)
	}
}

// countIDs counts the records whose key is in ids.
func countIDs(recs []*kgo.Record, ids map[string]bool) int {
	n := 0
	for _, r := range recs {
		if ids[string(r.Key)] {
			n++
		}
	}
	return n
}
