package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// The Kafka sink's ledger (sink.Ledger). Its mark is, per partition of
// its topics, the offset from which the sink may have stored records the
// checkpoint does not cover: the first offset of the oldest uncovered
// batch there, or the partition's end as the sink last knew it. After a
// crash Recover reads every partition from the mark to its end
// (read_committed) and returns the records it finds (sink.Held: their id
// and record time, the headers every record carries), per stream: the
// pipeline writes those to Kafka no more. With the idempotent producer (acks all,
// which the sink requires) a record is in a partition once per Write that
// stored it, so the log holds each record once.
//
// A mark may only err towards the past. The sink therefore knows the end
// of every partition of its topics before it produces there (Recover and
// the first Write to a topic ask the brokers, again while a partition's
// answer carries an error, and fail rather than go on without it), and a
// batch handed while a partition of its topic was unknown to the sink (a
// partition added since) marks that partition from its first offset, 0,
// until a commit covers the batch. Recover reads a partition of a marked
// topic that the mark does not name from 0 too. (Issue 29: a partition
// dropped from the ends for an error let Mark take the end produced since,
// past a batch the commit did not cover, whose records the next start
// wrote again.)

var _ sink.Ledger = (*Sink)(nil)

// tp is a topic partition.
type tp struct {
	Topic     string `json:"t"`
	Partition int32  `json:"p"`
}

// kafkaMark is the mark: Offsets[i] is where to read Partitions[i] from;
// Run is the run (Sink instance) whose batches the commit covered as far
// as Covered says, per stream: a record read back is one the checkpoint
// does not cover when its batch header (HeaderBatch) names Run and a Seq
// at or past its stream's Covered. Records of other runs were resolved
// before this mark or the checkpoint holds them (sink.Held).
type kafkaMark struct {
	Version int `json:"v"`
	sinkhelper.Covered
	Partitions []tp    `json:"tp"`
	Offsets    []int64 `json:"o"`
}

const kafkaMarkVersion = 2

// HeaderBatch is the header of every record the sink writes with delivery
// exactly_once: RUN/SEQ/ACCOUNT, the run (a random id per start), the
// batch's Seq and its stream's account, which Recover reads back.
const HeaderBatch = "collector_batch"

// batchAt is a batch handed to the producer in this run and not yet
// covered: its topics and, per partition, an offset at or before any it
// took. A partition of its topics that first lacks may hold its records
// from offset 0 on.
type batchAt struct {
	topics []string
	first  map[tp]int64
}

// kledger is the sink's side of the protocol.
type kledger struct {
	mu        sync.Mutex
	end       map[tp]int64 // past the last offset produced (or known at Recover), per partition
	uncovered sinkhelper.Uncovered[batchAt]
	cov       *sinkhelper.Coverage // the run and what the commits covered (HeaderBatch)
	// landed holds, per batch, the ids of a Write that failed after the
	// broker stored part of it: its retry does not write them again.
	landed map[landedKey]map[string]struct{}
}

type landedKey struct {
	k   record.Stream
	seq uint64
}

// unlanded returns b without the records a failed Write of the same batch
// stored (b itself when none); Mark forgets them once a commit covers the
// batch.
func (s *Sink) unlanded(b *record.Batch) *record.Batch {
	if !s.exactlyOnce() {
		return b
	}
	key := landedKey{b.Stream(), b.Seq}
	s.led.mu.Lock()
	ids, ok := s.led.landed[key]
	s.led.mu.Unlock()
	if !ok {
		return b
	}
	c := *b
	c.Envelopes = nil
	for _, e := range b.Envelopes {
		if _, done := ids[e.ID]; !done {
			c.Envelopes = append(c.Envelopes, e)
		}
	}
	return &c
}

// noteLanded records the records of a failed Write of b the broker stored
// (their id: the header id, else the key).
func (s *Sink) noteLanded(b *record.Batch, results kgo.ProduceResults) {
	if !s.exactlyOnce() {
		return
	}
	key := landedKey{b.Stream(), b.Seq}
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	ids := s.led.landed[key]
	for _, r := range results {
		if r.Err == nil && r.Record != nil {
			if ids == nil {
				ids = map[string]struct{}{}
				s.led.landed[key] = ids
			}
			id := string(r.Record.Key)
			for _, h := range r.Record.Headers {
				if h.Key == kafkarecord.HeaderID {
					id = string(h.Value)
				}
			}
			ids[id] = struct{}{}
		}
	}
}

// noteLandedIDs records ids as stored by a failed Write of b: the records
// of the chunks that the producer stored before a later one failed.
func (s *Sink) noteLandedIDs(b *record.Batch, ids []string) {
	if !s.exactlyOnce() || len(ids) == 0 {
		return
	}
	key := landedKey{b.Stream(), b.Seq}
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	got := s.led.landed[key]
	if got == nil {
		got = make(map[string]struct{}, len(ids))
		s.led.landed[key] = got
	}
	for _, id := range ids {
		got[id] = struct{}{}
	}
}

// Delivery implements sink.Ledger.
func (s *Sink) Delivery() string { return s.cfg.Delivery }

func (s *Sink) exactlyOnce() bool { return s.cfg.Delivery == sink.DeliveryExactlyOnce }

// noteHanded records that batch b is about to be produced to topics:
// whatever of it lands in a partition lands at or past the end the sink
// knows of it now (later records get later offsets), so that end is where
// a read-back must start until a commit covers the batch, whether its
// Write succeeds, fails or is cut by a crash. A partition of topics whose
// end the sink does not know now is read from 0 (Mark).
func (s *Sink) noteHanded(b *record.Batch, topics []string) {
	if !s.exactlyOnce() {
		return
	}
	k := b.Stream()
	ts := distinctTopics(topics)
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	s.led.uncovered.Handed(k, b.Seq, batchAt{topics: ts, first: maps.Clone(s.led.end)})
}

// knowsEnds reports whether the ledger knows the end of some partition of
// topic (all of them, then: they are learnt together). Without delivery
// exactly_once it reports true.
func (s *Sink) knowsEnds(topic string) bool {
	if !s.exactlyOnce() {
		return true
	}
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	for p := range s.led.end {
		if p.Topic == topic {
			return true
		}
	}
	return false
}

// learnEnds adds the ends of the partitions of topics that the sink does
// not know yet (a topic first met by Write), so that a batch handed there
// has a start in each (noteHanded). Without delivery exactly_once it does
// nothing.
func (s *Sink) learnEnds(ctx context.Context, topics []string) error {
	if !s.exactlyOnce() {
		return nil
	}
	end, err := s.listEnds(ctx, topics)
	if err != nil {
		return err
	}
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	for p, o := range end {
		if _, ok := s.led.end[p]; !ok {
			s.led.end[p] = o
		}
	}
	return nil
}

// noteStored moves the ends the sink knows past the records of a produce.
func (s *Sink) noteStored(results kgo.ProduceResults) {
	if !s.exactlyOnce() || len(results) == 0 {
		return
	}
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	for _, r := range results {
		if r.Err != nil || r.Record == nil {
			continue
		}
		p := tp{r.Record.Topic, r.Record.Partition}
		if r.Record.Offset+1 > s.led.end[p] {
			s.led.end[p] = r.Record.Offset + 1
		}
	}
}

// Mark implements sink.Ledger.
func (s *Sink) Mark(_ context.Context, next map[record.Stream]uint64) ([]byte, error) {
	if !s.exactlyOnce() {
		return nil, nil
	}
	s.led.mu.Lock()
	defer s.led.mu.Unlock()
	s.led.uncovered.Cover(next)
	for key := range s.led.landed {
		if n, ok := next[key.k]; ok && key.seq < n {
			delete(s.led.landed, key)
		}
	}
	from := maps.Clone(s.led.end)
	for b := range s.led.uncovered.All() {
		for p := range from {
			o, known := b.first[p]
			if !known && slices.Contains(b.topics, p.Topic) {
				// Unknown when b was handed: b's records may lie
				// anywhere in it.
				o, known = 0, true
			}
			if known && o < from[p] {
				from[p] = o
			}
		}
	}
	m := kafkaMark{Version: kafkaMarkVersion, Covered: s.led.cov.Advance(next)}
	for _, p := range slices.SortedFunc(maps.Keys(from), compareTP) {
		m.Partitions = append(m.Partitions, p)
		m.Offsets = append(m.Offsets, from[p])
	}
	return json.Marshal(m)
}

// Recover implements sink.Ledger: it reads what the partitions hold past
// the mark (nothing without one) and learns the end of every partition of
// the sink's topics, from which the next marks start.
func (s *Sink) Recover(ctx context.Context, mark []byte) (sink.Held, error) {
	if !s.exactlyOnce() {
		return nil, nil
	}
	if s.transactional() {
		// Fence first: an open transaction of the dead process would hold
		// back what read_committed can read (its last stable offset).
		if err := s.fence(ctx, s.client.Load()); err != nil {
			return nil, err
		}
	}
	end, err := s.listEnds(ctx, s.Topics())
	if err != nil {
		return nil, err
	}
	if mark != nil && !s.transactional() {
		// A killed collector's last produce requests may still be on
		// their way to the brokers (in the socket buffers); without a
		// transactional fence they land anyway. Wait until the ends hold
		// still, so that the read-back sees them.
		for range readBackSettleRounds {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("kafka sink: recover: %w", ctx.Err())
			case <-time.After(readBackSettle):
			}
			again, err := s.listEnds(ctx, s.Topics())
			if err != nil {
				return nil, err
			}
			if maps.Equal(again, end) {
				break
			}
			end = again
		}
	}
	var held sink.Held
	if mark != nil {
		var m kafkaMark
		if err := json.Unmarshal(mark, &m); err != nil || m.Version != kafkaMarkVersion || len(m.Offsets) != len(m.Partitions) {
			return nil, fmt.Errorf("kafka sink: the checkpoint's mark of this sink is unreadable (version %d): %v", m.Version, err)
		}
		from := map[tp]int64{}
		marked := map[string]bool{}
		for i, p := range m.Partitions {
			marked[p.Topic] = true
			if e, ok := end[p]; ok && m.Offsets[i] < e {
				from[p] = m.Offsets[i]
			}
		}
		for p, e := range end {
			// A partition added to a marked topic after the mark: the
			// dead process may have written there from its first offset.
			if marked[p.Topic] && !slices.Contains(m.Partitions, p) && e > 0 {
				from[p] = 0
			}
		}
		began := time.Now()
		if held, err = s.readBack(ctx, from, end, m.Covered.Uncovered()); err != nil {
			return nil, err
		}
		n := 0
		for _, keys := range held {
			n += len(keys)
		}
		s.m.readBack(n, time.Since(began))
		s.log.Info("kafka sink: read back what the partitions hold past the checkpoint", "partitions", len(from), "records", n,
			"took", time.Since(began).Round(time.Millisecond))
	}
	s.led.mu.Lock()
	s.led.end = end
	s.led.uncovered.Reset()
	s.led.mu.Unlock()
	s.led.cov.Reset()
	return held, nil
}

// readBack consumes every partition of from, from its offset up to its end
// in end, and returns the ids of the records the mark does not cover
// (uncovered, by their source and batch header), by their batch's stream
// (the id is the header id when there is one, else the key; the record time
// is the time header, which every record carries, C7).
func (s *Sink) readBack(ctx context.Context, from, end map[tp]int64, uncovered func(source, batch string) (record.Stream, bool)) (sink.Held, error) {
	out := sink.Held{}
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
	opts := append(connOpts(s.cfg, s.conn, s.log), kgo.ConsumePartitions(parts), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers come back too, so a partition whose last
		// offset is a commit or abort marker is read to its end at once.
		kgo.KeepControlRecords())
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
			s.log.Warn("kafka sink: read-back stopped before the end of some partitions (nothing came for a while); what lies past is taken as not stored",
				"partitions", len(left), "idle", readBackIdle)
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
			if r.Attrs.IsControl() {
				return
			}
			var src, id, batch string
			var at time.Time
			for _, h := range r.Headers {
				switch h.Key {
				case kafkarecord.HeaderSource:
					src = string(h.Value)
				case HeaderBatch:
					batch = string(h.Value)
				case kafkarecord.HeaderID:
					id = string(h.Value)
				case kafkarecord.HeaderTime:
					// Written by record.AppendTime: it parses back to
					// the millisecond. Unreadable, it is the zero time:
					// the key's id hash still names the record.
					at, _ = record.ParseTimeString(string(h.Value))
				}
			}
			if id == "" {
				id = string(r.Key)
			}
			if k, ok := uncovered(src, batch); ok && id != "" {
				sinkhelper.Add(out, k, id, at)
			}
		})
	}
	return out, nil
}

// listEnds returns the end offset of every partition of topics. It asks
// again for the topics of partitions whose answer carried an error (a
// leader moving, a topic just created), listEndsTries times in all, and
// fails naming those whose end it never learnt: the ledger must never go
// on without a partition's end (see kledger).
func (s *Sink) listEnds(ctx context.Context, topics []string) (map[tp]int64, error) {
	end := map[tp]int64{}
	wait := listEndsBackoff
	for try := 1; ; try++ {
		ends, err := s.adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("kafka sink: list end offsets: %w", err)
		}
		failed := map[tp]error{}
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				failed[tp{o.Topic, o.Partition}] = o.Err
				return
			}
			end[tp{o.Topic, o.Partition}] = o.Offset
		})
		if len(failed) == 0 {
			return end, nil
		}
		parts := slices.SortedFunc(maps.Keys(failed), compareTP)
		if try == listEndsTries {
			errs := make([]error, 0, len(parts))
			for _, p := range parts {
				errs = append(errs, fmt.Errorf("%s/%d: %w", p.Topic, p.Partition, failed[p]))
			}
			return nil, fmt.Errorf("kafka sink: list end offsets: no answer for %d partitions after %d tries (their read-back would start nowhere): %w",
				len(parts), try, errors.Join(errs...))
		}
		s.log.Warn("kafka sink: a partition's end offset came back with an error; asking again", "partition",
			fmt.Sprintf("%s/%d", parts[0].Topic, parts[0].Partition), "partitions", len(parts), "err", failed[parts[0]])
		topics = nil
		for _, p := range parts {
			topics = append(topics, p.Topic)
		}
		topics = slices.Compact(topics)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kafka sink: list end offsets: %w", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, listEndsMaxBackoff)
	}
}

// compareTP orders partitions by topic, then number.
func compareTP(a, b tp) int {
	if a.Topic != b.Topic {
		return strings.Compare(a.Topic, b.Topic)
	}
	return int(a.Partition - b.Partition)
}

// listEnds asks at most listEndsTries times, waiting listEndsBackoff
// after the first, twice as long after each next up to
// listEndsMaxBackoff: about 10 s in all.
const (
	listEndsTries      = 8
	listEndsBackoff    = 100 * time.Millisecond
	listEndsMaxBackoff = 3 * time.Second
)

// readBackSettle is how long Recover waits for a partition's end to hold
// still before it reads back (at most readBackSettleRounds times), when no
// transactional fence stops a dead collector's late writes.
const (
	readBackSettle       = time.Second
	readBackSettleRounds = 5
)

// readBackIdle is how long Recover's read-back waits for more records of
// a partition it has not read to its end (a partition whose last offsets
// are transaction markers of another producer yields none).
const readBackIdle = 30 * time.Second

// distinctTopics returns the topics of topics (one a record, in runs),
// sorted, in a slice of their own: a batch's ledger entry keeps them until
// a commit covers it, and a slice cut from one a record long kept every
// record's entry with it (80 KB a batch of 5,000, 2.7 MiB of a Kafka
// backfill's peak).
func distinctTopics(topics []string) []string {
	var ts []string
	for i, t := range topics {
		if i == 0 || t != topics[i-1] {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return slices.Clip(slices.Compact(ts))
}
