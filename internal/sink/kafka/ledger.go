package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
)

// The Kafka sink's ledger (sink.Ledger). Its mark is, per partition of
// its topics, the offset from which the sink may have stored records the
// checkpoint does not cover: the first offset of the oldest uncovered
// batch there, or the partition's end as the sink last knew it. After a
// crash Recover reads every partition from the mark to its end
// (read_committed) and returns the ids it finds, per stream: the pipeline
// writes those to Kafka no more. With the idempotent producer (acks all,
// which the sink requires) a record is in a partition once per Write that
// stored it, so the log holds each record once.

var _ sink.Ledger = (*Sink)(nil)

// tp is a topic partition.
type tp struct {
	Topic     string `json:"t"`
	Partition int32  `json:"p"`
}

// kafkaMark is the mark: Offsets[i] is where to read Partitions[i] from.
type kafkaMark struct {
	Version    int     `json:"v"`
	Partitions []tp    `json:"tp"`
	Offsets    []int64 `json:"o"`
}

const kafkaMarkVersion = 1

// batchAt is a batch stored in this run and not yet covered: its Seq and
// the first offset it took in each partition.
type batchAt struct {
	seq   uint64
	first map[tp]int64
}

// kledger is the sink's side of the protocol.
type kledger struct {
	mu        sync.Mutex
	end       map[tp]int64                // past the last offset produced (or known at Recover), per partition
	uncovered map[record.Stream][]batchAt // in Seq order
}

// Delivery implements sink.Ledger.
func (s *Sink) Delivery() string { return s.cfg.Delivery }

func (s *Sink) exactlyOnce() bool { return s.cfg.Delivery == sink.DeliveryExactlyOnce }

// noteStored records where the records of batch b went (results of a
// produce without error).
func (s *Sink) noteStored(b *record.Batch, results kgo.ProduceResults) {
	if !s.exactlyOnce() || len(results) == 0 {
		return
	}
	first := map[tp]int64{}
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	for _, r := range results {
		if r.Err != nil || r.Record == nil {
			continue
		}
		p := tp{r.Record.Topic, r.Record.Partition}
		if o, ok := first[p]; !ok || r.Record.Offset < o {
			first[p] = r.Record.Offset
		}
		if r.Record.Offset+1 > s.led.end[p] {
			s.led.end[p] = r.Record.Offset + 1
		}
	}
	k := record.Stream{Source: b.Source, Account: b.Account}
	s.led.uncovered[k] = append(s.led.uncovered[k], batchAt{seq: b.Seq, first: first})
}

// Mark implements sink.Ledger.
func (s *Sink) Mark(_ context.Context, next map[record.Stream]uint64) ([]byte, error) {
	if !s.exactlyOnce() {
		return nil, nil
	}
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	for k, n := range next {
		bs := s.led.uncovered[k]
		i := 0
		for i < len(bs) && bs[i].seq < n {
			i++
		}
		s.led.uncovered[k] = bs[i:]
	}
	from := maps.Clone(s.led.end)
	for _, bs := range s.led.uncovered {
		for _, b := range bs {
			for p, o := range b.first {
				if o < from[p] {
					from[p] = o
				}
			}
		}
	}
	m := kafkaMark{Version: kafkaMarkVersion}
	for _, p := range slices.SortedFunc(maps.Keys(from), func(a, b tp) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	}) {
		m.Partitions = append(m.Partitions, p)
		m.Offsets = append(m.Offsets, from[p])
	}
	return json.Marshal(m)
}

// Recover implements sink.Ledger: it reads what the partitions hold past
// the mark (nothing without one) and learns the end of every partition of
// the sink's topics, from which the next marks start.
func (s *Sink) Recover(ctx context.Context, mark []byte) (sink.Stored, error) {
	if !s.exactlyOnce() {
		return nil, nil
	}
	ends, err := s.adm.ListEndOffsets(ctx, s.Topics()...)
	if err != nil {
		return nil, fmt.Errorf("kafka sink: recover: list end offsets: %w", err)
	}
	end := map[tp]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			end[tp{o.Topic, o.Partition}] = o.Offset
		}
	})
	var stored sink.Stored
	if mark != nil {
		var m kafkaMark
		if err := json.Unmarshal(mark, &m); err != nil || m.Version != kafkaMarkVersion || len(m.Offsets) != len(m.Partitions) {
			return nil, fmt.Errorf("kafka sink: the checkpoint's mark of this sink is unreadable (version %d): %v", m.Version, err)
		}
		from := map[tp]int64{}
		for i, p := range m.Partitions {
			if e, ok := end[p]; ok && m.Offsets[i] < e {
				from[p] = m.Offsets[i]
			}
		}
		began := time.Now()
		if stored, err = s.readBack(ctx, from, end); err != nil {
			return nil, err
		}
		n := 0
		for _, ids := range stored {
			n += len(ids)
		}
		s.m.readBack(n, time.Since(began))
		s.log.Info("kafka sink: read back what the partitions hold past the checkpoint", "partitions", len(from), "records", n,
			"took", time.Since(began).Round(time.Millisecond))
	}
	s.led.mu.Lock()
	s.led.end = end
	s.led.uncovered = map[record.Stream][]batchAt{}
	s.led.mu.Unlock()
	return stored, nil
}

// readBack consumes every partition of from, from its offset up to its end
// in end, and returns the record ids found, by stream (the source and
// account headers; the id is the header id when there is one, else the
// key).
func (s *Sink) readBack(ctx context.Context, from, end map[tp]int64) (sink.Stored, error) {
	out := sink.Stored{}
	if len(from) == 0 {
		return out, nil
	}
	parts := map[string]map[int32]kgo.Offset{}
	left := map[tp]int64{}
	for p, o := range from {
		if parts[p.Topic] == nil {
			parts[p.Topic] = map[int32]kgo.Offset{}
		}
		parts[p.Topic][p.Partition] = kgo.NewOffset().At(o)
		left[p] = end[p]
	}
	opts := append(connOpts(s.cfg, s.conn, s.log), kgo.ConsumePartitions(parts), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka sink: recover: create a reader: %w", err)
	}
	defer cl.Close()
	for len(left) > 0 {
		// A poll that brings nothing for readBackIdle means the rest is
		// past what can be read (aborted records, transaction markers of
		// other producers at a partition's end).
		pctx, cancel := context.WithTimeout(ctx, readBackIdle)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("kafka sink: recover: read back: %w", err)
		}
		if fs.NumRecords() == 0 && pctx.Err() != nil {
			break
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("read back %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("kafka sink: recover: %w", ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			p := tp{r.Topic, r.Partition}
			if e, ok := left[p]; ok && r.Offset+1 >= e {
				delete(left, p)
			}
			var src, acct, id string
			for _, h := range r.Headers {
				switch h.Key {
				case kafkarecord.HeaderSource:
					src = string(h.Value)
				case kafkarecord.HeaderAccount:
					acct = string(h.Value)
				case "id":
					id = string(h.Value)
				}
			}
			if id == "" {
				id = string(r.Key)
			}
			if src == "" || id == "" {
				return
			}
			k := record.Stream{Source: src, Account: acct}
			if out[k] == nil {
				out[k] = map[string]struct{}{}
			}
			out[k][id] = struct{}{}
		})
	}
	return out, nil
}

// readBackIdle is how long Recover's read-back waits for more records of
// a partition it has not read to its end.
const readBackIdle = 3 * time.Second
