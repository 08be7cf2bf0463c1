package kafka

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxRecreateRounds bounds how often one Write purges and produces again:
// a topic recreated twice during one Write is rare, and the pipeline
// retries what is left.
const maxRecreateRounds = 3

// purges tracks the topics the sink purged from its client because they
// were deleted and recreated (issue 20 item 8).
//
// franz-go never adopts the new id of a recreated topic: from the
// metadata refresh that sees the new id on, it fails every record of the
// topic with UNKNOWN_TOPIC_ID (those buffered and those produced later)
// until the topic is purged from the client; the next produce then loads
// the topic afresh. One purge per recreation is enough, and a purge fails
// the records of the topic then buffered (by a concurrent Write) with an
// error of its own; so a Write purges a topic only when nobody purged it
// since the Write handed its records to the producer, and produces again
// every failed record of a topic purged since then, whatever its error.
//
// Its methods are safe for concurrent use. A purge waits for franz-go's
// metadata loop, which is rare enough not to matter to the Writes that
// wait meanwhile.
type purges struct {
	mu  sync.Mutex
	gen uint64            // increases with each purge
	at  map[string]uint64 // the gen of each topic's last purge; nil until the first
}

// generation returns the current purge generation: a Write takes it
// before producing.
func (p *purges) generation() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}

// since reports whether topic was purged after generation gen.
func (p *purges) since(topic string, gen uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.at[topic] > gen
}

// purge purges topic from cl's producer unless that happened after gen,
// and reports whether it purged.
func (p *purges) purge(cl *kgo.Client, topic string, gen uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.at[topic] > gen {
		return false
	}
	cl.PurgeTopicsFromProducing(topic)
	p.gen++
	if p.at == nil {
		p.at = make(map[string]uint64)
	}
	p.at[topic] = p.gen
	return true
}

// healRecreated produces again the records of results that failed because
// their topic was deleted and recreated while the sink ran: those failed
// with UNKNOWN_TOPIC_ID, after purging their topic from the client (see
// purges), and those of a topic purged since gen, the generation taken
// before they were produced. It returns results with the new outcomes in
// place of the old ones; records that fail again stay failed, and the
// pipeline retries their batch. It gives up after maxRecreateRounds
// rounds, and when ctx ends (the records already handed to the producer
// settle as produce says).
func (s *Sink) healRecreated(ctx context.Context, cl *kgo.Client, results kgo.ProduceResults, gen uint64) kgo.ProduceResults {
	for range maxRecreateRounds {
		var again []int // indexes into results
		purged := map[string]bool{}
		for i, r := range results {
			if r.Err == nil {
				continue
			}
			topic := r.Record.Topic
			switch {
			case s.purges.since(topic, gen):
			case errors.Is(r.Err, kerr.UnknownTopicID):
				if !purged[topic] && s.purges.purge(cl, topic, gen) {
					s.log.Warn("kafka topic was deleted and recreated: producing to the new topic (records acknowledged by the old one before its deletion are gone with it)",
						"topic", topic)
					// The new topic may have another max.message.bytes.
					s.learnLimits(ctx, s.adm, []string{topic})
				}
				purged[topic] = true
			default:
				continue
			}
			again = append(again, i)
		}
		if len(again) == 0 || ctx.Err() != nil {
			return results
		}
		gen = s.purges.generation()
		recs := make([]*kgo.Record, len(again))
		for j, i := range again {
			r := results[i].Record
			// franz-go set these when it took the record; a record given
			// again must look new (its partition is picked anew).
			r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch, r.LeaderEpoch, r.Context = 0, 0, 0, 0, 0, nil
			recs[j] = r
		}
		res, err := s.produce(ctx, ctx, cl, recs)
		if err != nil {
			return results
		}
		byRec := make(map[*kgo.Record]error, len(res))
		for _, r := range res {
			byRec[r.Record] = r.Err
		}
		results = slices.Clone(results)
		for _, i := range again {
			results[i].Err = byRec[results[i].Record]
		}
	}
	return results
}
