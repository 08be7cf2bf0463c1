package kafka_test

import (
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
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
