package kafka_test

import (
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// A Write hands its batch to the producer a chunk at a time, the next one
// encoded once the one before is acknowledged: what the sink holds encoded
// follows the chunk, not the page (issue 30, memory a pod can be sized
// for), and every record still arrives once (C7).
func TestWriteProducesInChunks(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.dns"))
	s, _ := startSink(t, testConfig(c), []record.Stream{{Source: "dns", Account: "acme"}}, nil)

	const n = 2000
	b := makeBatch(t, "dns", "acme", 0, 0, n, 2000)
	smallest, total := b.Envelopes[0].Size(), 0
	for i := range b.Envelopes {
		smallest = min(smallest, b.Envelopes[i].Size())
		total += b.Envelopes[i].Size()
	}
	if total < 3*kafka.ProduceChunkBytes {
		t.Fatalf("the batch holds %d bytes, fewer than three chunks", total)
	}
	// The most records one chunk can hold: whole envelopes up to the
	// chunk's bytes, and the one that crosses it.
	perChunk := int64(kafka.ProduceChunkBytes/smallest + 1)

	var most, requests atomic.Int64 // records the producer held when a produce request came; requests
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		requests.Add(1)
		held := kafka.BufferedRecords(s)
		for {
			m := most.Load()
			if held <= m || most.CompareAndSwap(m, held) {
				break
			}
		}
		return nil, nil, false
	})
	write(t, s, b)

	if requests.Load() < 3 {
		t.Fatalf("%d produce requests for %d bytes: the chunks were not produced apart", requests.Load(), total)
	}
	if m := most.Load(); m > perChunk {
		t.Errorf("the producer held %d records of the %d-record batch at once; a chunk holds at most %d", m, n, perChunk)
	}
	got := byKey(t, kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns"}), true)
	if len(got) != n {
		t.Errorf("read %d records back, wrote %d", len(got), n)
	}
}

// With delivery exactly_once every record carries the batch header
// (HeaderBatch) after its own headers, and the records of a chunk keep
// their headers on one slab: adding the batch header to each record after
// encoding copied every record's headers to an array of its own, one
// allocation a record, about a fifth of what a chunk held (issue 30).
func TestEveryRecordCarriesTheBatchHeaderOnTheChunksOneHeaderSlab(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.dns"))
	s, _ := startSink(t, testConfig(c), []record.Stream{{Source: "dns", Account: "acme"}}, nil)
	b := makeBatch(t, "dns", "acme", 0, 0, 50, 10)
	send, err := kafka.Prepare(s, b, "svc.dns")
	if err != nil {
		t.Fatal(err)
	}
	if len(send) != len(b.Envelopes) {
		t.Fatalf("%d records for %d envelopes", len(send), len(b.Envelopes))
	}
	size := unsafe.Sizeof(kgo.RecordHeader{})
	for i, r := range send {
		h := r.Headers
		if len(h) == 0 || h[len(h)-1].Key != kafka.HeaderBatch || len(h[len(h)-1].Value) == 0 {
			t.Fatalf("record %d: headers %v, want %s last", i, h, kafka.HeaderBatch)
		}
		if cap(h) != len(h) {
			t.Fatalf("record %d: headers of capacity %d for %d: a header appended to it would overwrite the next record's", i, cap(h), len(h))
		}
		if i == 0 {
			continue
		}
		prev := send[i-1].Headers
		if uintptr(unsafe.Pointer(&h[0])) != uintptr(unsafe.Pointer(&prev[len(prev)-1]))+size {
			t.Fatalf("record %d's headers do not follow record %d's on one slab: each record's headers were copied apart", i, i-1)
		}
	}
}
