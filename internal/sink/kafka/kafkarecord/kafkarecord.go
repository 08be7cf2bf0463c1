package kafkarecord

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
)

// Header keys every record carries, in this order. Times are RFC 3339 with
// milliseconds, UTC (CONTRACT C7).
const (
	HeaderTenant      = "tenant" // only on a record of a named tenant
	HeaderSource      = "source"
	HeaderAccount     = "account"
	HeaderTime        = "time"
	HeaderWindowStart = "window_start"
	HeaderWindowEnd   = "window_end"
	HeaderFetchedAt   = "fetched_at"
	HeaderContentType = "content-type"
	// HeaderSnapshot is "true" on a record of an inventory walk
	// (record.Envelope.Snapshot: an agent's state as of the record's
	// time); other records do not carry it.
	HeaderSnapshot = "snapshot"
)

// ContentType is the value of the content-type header of the formats
// envelope and record: both carry JSON.
const ContentType = "application/json"

// ContentTypeOCSF is the value of the content-type header of format ocsf:
// JSON, with the OCSF release of the events as its profile (RFC 6906), so
// that a consumer that matches application/json still reads it and one
// that cares learns the schema.
const ContentTypeOCSF = `application/json; profile="https://schema.ocsf.io/` + ocsfVersion + `"`

// ocsfVersion is ocsf.Version, the release every event follows (a test
// holds them equal; a constant keeps this package free of the mapping).
const ocsfVersion = "1.3.0"

// Mapper writes the OCSF event of an envelope: ocsfenc.Encoder.
type Mapper interface {
	// Append appends e's event as one JSON object, or fails for an
	// envelope that can never be mapped.
	Append(dst []byte, e *record.Envelope) ([]byte, error)
}

const numHeaders = 7

// batchOverhead is the size of an empty record batch on the wire (franz-go's
// recordBatchOverhead). A record fits a batch of its
// own when batchOverhead plus its encoded size is at most the batch limit.
const batchOverhead = 65

// TooLargeSlack widens the "this record alone is too large" test for a
// record the producer already refused: franz-go's own size arithmetic may
// count a few bytes more than StandaloneSize, and such a record must not be
// retried forever.
const TooLargeSlack = 512

// Encoder turns the envelopes of one batch into Kafka records. The zero
// value writes the envelope as the value; Raw writes the record as the API
// sent it; OCSF writes the record's OCSF event. Keys, values and header
// values of a batch share one byte slab and one header slab: the records
// are handed to the producer and never modified, so sharing is safe, and a
// batch costs a few allocations instead of ten per record. An Encoder is
// safe for concurrent use when its Mapper is.
type Encoder struct {
	// Raw makes the value the raw record (format "record") instead of the
	// envelope JSON (format "envelope").
	Raw bool
	// OCSF, when set, makes the value the record's OCSF 1.3.0 event
	// (format "ocsf") and the content-type ContentTypeOCSF; the key and
	// the other headers stay as in the other formats. It wins over Raw.
	OCSF Mapper
	// FetchedTimestamp makes the message timestamp the time the record's
	// page was fetched; by default it is the record time (C7), so that
	// time-based retention, offsetsForTimes and time partitioners
	// downstream see when the event happened, also in a backfill. A
	// record without a time takes its fetch time.
	FetchedTimestamp bool
	// EntityKeys names the sources whose key is the record's entity within
	// its account (EntityKeyOf: the alert of an edge alert, the agent of
	// agent info, ...) instead of its id; their records carry the id in
	// the header HeaderID. A record without its entity member keeps its id
	// as the key. Other sources are keyed by id.
	EntityKeys map[string]bool
}

// Encode returns one record per envelope; topics[i] is the topic of
// envs[i]. Every record carries the headers extra after its own (the
// sink's batch header), on the batch's one header slab: adding a header to
// a record afterwards would copy its headers. It fails only with OCSF, for
// an envelope the mapper can never take, naming it.
func (e Encoder) Encode(envs []record.Envelope, topics []string, extra ...kgo.RecordHeader) ([]kgo.Record, error) {
	n := len(envs)
	size, more := 0, 0 // more: headers beyond numHeaders and extra
	for i := range envs {
		size += envs[i].Size() + 4*len(record.TimeLayout) + len(envs[i].Source) + len(envs[i].Account)
		if e.EntityKeys[envs[i].Source] {
			size += len(envs[i].ID) + len(envs[i].Account) + 64 // the id header and an entity key
			more++
		}
		if envs[i].Snapshot {
			more++
		}
		if envs[i].Tenant != "" {
			size += len(envs[i].Tenant)
			more++
		}
	}
	size += len(ContentTypeOCSF)
	slab := make([]byte, 0, size)
	var events []byte // format ocsf: the values, on a slab of their own
	if e.OCSF != nil {
		// An event is 2 to 4.8 times its record (docs/ocsf.md).
		events = make([]byte, 0, 3*size)
	}
	hdrs := make([]kgo.RecordHeader, 0, n*(numHeaders+len(extra))+more)
	recs := make([]kgo.Record, n)

	// Pages share their window and fetch time: format each distinct time once.
	var last [3]time.Time
	var lastVal [3][]byte
	timeVal := func(slot int, t time.Time) []byte {
		if lastVal[slot] != nil && last[slot].Equal(t) {
			return lastVal[slot]
		}
		start := len(slab)
		slab = record.AppendTime(slab, t)
		v := slab[start:len(slab):len(slab)]
		last[slot], lastVal[slot] = t, v
		return v
	}
	put := func(s string) []byte {
		start := len(slab)
		slab = append(slab, s...)
		return slab[start:len(slab):len(slab)]
	}
	ct := ContentType
	if e.OCSF != nil {
		ct = ContentTypeOCSF
	}
	contentType := put(ct) // one value for the batch's records
	var lastSource, lastAccount string
	var srcVal, accVal []byte

	for i := range envs {
		env := &envs[i]
		r := &recs[i]
		r.Topic = topics[i]
		r.Key = nil
		byEntity := e.EntityKeys[env.Source]
		if byEntity {
			if k, ok := TenantEntityKeyOf(env.Tenant, env.Source, env.Account, env.Record); ok {
				r.Key = put(k)
			}
		}
		if r.Key == nil {
			r.Key = put(env.ID)
		}
		r.Timestamp = env.Time
		if e.FetchedTimestamp || r.Timestamp.IsZero() {
			r.Timestamp = env.FetchedAt
		}
		switch {
		case e.OCSF != nil:
			start := len(events)
			var err error
			if events, err = e.OCSF.Append(events, env); err != nil {
				return nil, fmt.Errorf("record %s of %s/%s: %w", env.ID, env.Source, env.Account, err)
			}
			r.Value = events[start:len(events):len(events)]
		case e.Raw:
			// The envelope does not own Record, but nobody modifies a
			// page's bytes after decoding (record.Envelope), so the
			// producer may hold it until the promise.
			r.Value = env.Record
			if env.Original != nil {
				// The record as the API sent it, byte for byte: a value
				// may hold any bytes (record.Envelope.Original).
				r.Value = env.Original
			}
		default:
			start := len(slab)
			slab = env.AppendJSON(slab)
			r.Value = slab[start:len(slab):len(slab)]
		}
		if srcVal == nil || env.Source != lastSource {
			lastSource, srcVal = env.Source, put(env.Source)
		}
		if accVal == nil || env.Account != lastAccount {
			lastAccount, accVal = env.Account, put(env.Account)
		}
		first := len(hdrs)
		start := len(slab)
		slab = record.AppendTime(slab, env.Time)
		hdrs = append(hdrs,
			kgo.RecordHeader{Key: HeaderSource, Value: srcVal},
			kgo.RecordHeader{Key: HeaderAccount, Value: accVal},
			kgo.RecordHeader{Key: HeaderTime, Value: slab[start:len(slab):len(slab)]},
			kgo.RecordHeader{Key: HeaderWindowStart, Value: timeVal(0, env.WindowStart)},
			kgo.RecordHeader{Key: HeaderWindowEnd, Value: timeVal(1, env.WindowEnd)},
			kgo.RecordHeader{Key: HeaderFetchedAt, Value: timeVal(2, env.FetchedAt)},
			kgo.RecordHeader{Key: HeaderContentType, Value: contentType})
		if byEntity {
			hdrs = append(hdrs, kgo.RecordHeader{Key: HeaderID, Value: put(env.ID)})
		}
		if env.Snapshot {
			hdrs = append(hdrs, kgo.RecordHeader{Key: HeaderSnapshot, Value: put("true")})
		}
		if env.Tenant != "" {
			hdrs = append(hdrs, kgo.RecordHeader{Key: HeaderTenant, Value: put(env.Tenant)})
		}
		hdrs = append(hdrs, extra...)
		// Capped: a header appended to one record must not overwrite the
		// next record's.
		r.Headers = hdrs[first:len(hdrs):len(hdrs)]
	}
	return recs, nil
}

// StandaloneSize is the wire size of a record batch holding r alone,
// before compression: what the batch limit is compared against.
func StandaloneSize(r *kgo.Record) int {
	l := 1 + // attributes
		1 + // timestamp delta 0
		1 + // offset delta 0
		varintLen(len(r.Key)) + len(r.Key) +
		varintLen(len(r.Value)) + len(r.Value) +
		varintLen(len(r.Headers))
	for _, h := range r.Headers {
		l += varintLen(len(h.Key)) + len(h.Key) + varintLen(len(h.Value)) + len(h.Value)
	}
	return batchOverhead + varintLen(l) + l
}

// varintLen is the length of n as a zigzag varint.
func varintLen(n int) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], int64(n))
}
