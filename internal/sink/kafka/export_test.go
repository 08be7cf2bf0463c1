package kafka

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
)

// ProduceChunkBytes is produceChunkBytes, for the tests of package
// kafka_test.
const ProduceChunkBytes = produceChunkBytes

// BufferedRecords is how many records s's producer holds unacknowledged.
func BufferedRecords(s *Sink) int64 {
	cl := s.client.Load()
	if cl == nil {
		return 0
	}
	return cl.BufferedProduceRecords()
}

// Prepare is what a Write of b hands the producer for its first chunk:
// the records of b's envelopes up to produceChunkBytes, encoded, all to
// topic.
func Prepare(s *Sink, b *record.Batch, topic string) ([]*kgo.Record, error) {
	topics := make([]string, len(b.Envelopes))
	for i := range topics {
		topics[i] = topic
	}
	send, _, _, err := s.prepare(b, 0, chunkEnd(b.Envelopes, 0), topics)
	return send, err
}
