package kafka

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
