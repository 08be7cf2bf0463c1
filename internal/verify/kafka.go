package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
)

// Kafka counts what the Kafka sink produced (package internal/sink/kafka):
// it reads Topics from their start offsets up to the end offsets taken when
// it begins (records produced later are not counted) and counts each
// record by its headers source, account and time and its key (the C7 id;
// edge alerts by the uuid of the record, in either value format). Records
// without those headers are not the sink's and are skipped.
type Kafka struct {
	// Opts make the client: kgo.SeedBrokers and the sink's TLS and SASL
	// options. Consumer options are added by Delivered.
	Opts []kgo.Opt
	// Topics are the topics the targets' streams are written to (the
	// sink's topic template applied to them).
	Topics []string
	// Timeout bounds the whole read; default ten minutes.
	Timeout time.Duration
}

var _ Delivered = Kafka{}

type partition struct {
	topic string
	part  int32
}

// Delivered implements Delivered.
func (k Kafka) Delivered(ctx context.Context, targets []Target) (map[Key]int64, error) {
	t := newTally(targets)
	if len(k.Topics) == 0 {
		return t.counts(), nil
	}
	timeout := k.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	admCl, err := kgo.NewClient(k.Opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: client: %w", err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	starts, err := adm.ListStartOffsets(ctx, k.Topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: start offsets of %v: %w", k.Topics, err)
	}
	ends, err := adm.ListEndOffsets(ctx, k.Topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: end offsets of %v: %w", k.Topics, err)
	}
	from := map[string]map[int32]kgo.Offset{}
	until := map[partition]int64{}
	var listErr error
	ends.Each(func(o kadm.ListedOffset) {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			return // a topic never written holds nothing
		}
		if o.Err != nil {
			listErr = fmt.Errorf("kafka: end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
			return
		}
		s, ok := starts.Lookup(o.Topic, o.Partition)
		if !ok || s.Err != nil || s.Offset >= o.Offset {
			return // empty
		}
		if from[o.Topic] == nil {
			from[o.Topic] = map[int32]kgo.Offset{}
		}
		from[o.Topic][o.Partition] = kgo.NewOffset().At(s.Offset)
		until[partition{o.Topic, o.Partition}] = o.Offset
	})
	if listErr != nil {
		return nil, listErr
	}
	if len(until) == 0 {
		return t.counts(), nil
	}
	cl, err := kgo.NewClient(append(k.Opts[:len(k.Opts):len(k.Opts)], kgo.ConsumePartitions(from))...)
	if err != nil {
		return nil, fmt.Errorf("kafka: consumer: %w", err)
	}
	defer cl.Close()
	for len(until) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("kafka: %d partitions not read to their end offsets: %w", len(until), err)
		}
		var fetchErr error
		fs.EachError(func(topic string, p int32, err error) {
			fetchErr = fmt.Errorf("kafka: fetch %s/%d: %w", topic, p, err)
		})
		if fetchErr != nil {
			return nil, fetchErr
		}
		fs.EachRecord(func(r *kgo.Record) {
			p := partition{r.Topic, r.Partition}
			end, ok := until[p]
			if !ok || r.Offset >= end {
				return
			}
			countRecord(t, r)
			if r.Offset+1 >= end {
				delete(until, p)
			}
		})
	}
	return t.counts(), nil
}

// countRecord counts one record of the sink by its headers and key.
func countRecord(t *tally, r *kgo.Record) {
	var tenant, source, account, tm string
	for _, h := range r.Headers {
		switch h.Key {
		case "tenant":
			tenant = string(h.Value)
		case "source":
			source = string(h.Value)
		case "account":
			account = string(h.Value)
		case "time":
			tm = string(h.Value)
		case "snapshot":
			// An inventory walk's record: in no window the API counts.
			return
		}
	}
	if source == "" || tm == "" {
		return
	}
	k := t.resolve(record.Stream{Tenant: tenant, Source: source, Account: account})
	if !t.wants(k) {
		return
	}
	at, err := time.Parse(time.RFC3339Nano, tm)
	if err != nil {
		return
	}
	var raw []byte
	if source == alertsSource {
		// Format envelope holds the record in "record"; format record is
		// the record.
		var env struct {
			ID     string          `json:"id"`
			Record json.RawMessage `json:"record"`
		}
		raw = r.Value
		if json.Unmarshal(r.Value, &env) == nil && env.ID != "" && len(env.Record) > 0 {
			raw = env.Record
		}
	}
	t.add(k, at, identity(source, r.Key, raw))
}
