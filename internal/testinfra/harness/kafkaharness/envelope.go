package kafkaharness

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Headers are the headers every record of the Kafka sink carries
// (internal/sink/kafka doc.go), each exactly once.
func Headers() []string {
	return []string{"source", "account", "time", "window_start", "window_end", "fetched_at", "content-type"}
}

// batchHeader is kafka.HeaderBatch (not imported: the harness reads what a
// consumer reads).
const batchHeader = "collector_batch"

// idHeader is kafkarecord.HeaderID: the record id of a record keyed by its
// entity (sink.kafka.keys; agent_info and edge_alerts by default).
const idHeader = "id"

// snapshotHeader is "true" on an inventory walk's record
// (kafkarecord.HeaderSnapshot); other records have none.
const snapshotHeader = "snapshot"

// HeadersOf checks that m carries each of Headers exactly once and no
// other (but the batch header of delivery exactly_once, kafka.HeaderBatch,
// RUN/SEQ/ACCOUNT, and the id header of a record keyed by its entity),
// content-type application/json and times in the C7 form, and returns
// them by name.
func HeadersOf(m *Message) (map[string]string, error) { return HeadersWithType(m, "application/json") }

// HeadersWithType is HeadersOf for a record whose content-type is
// contentType (format ocsf: kafkarecord.ContentTypeOCSF).
func HeadersWithType(m *Message, contentType string) (map[string]string, error) {
	want := Headers()
	h := map[string]string{}
	for i := 0; i+1 < len(m.Headers); i += 2 {
		if _, dup := h[m.Headers[i]]; dup {
			return nil, fmt.Errorf("header %q twice: %q", m.Headers[i], m.Headers)
		}
		h[m.Headers[i]] = m.Headers[i+1]
	}
	extra := 0
	if b, ok := h[batchHeader]; ok {
		if strings.Count(b, "/") < 2 {
			return nil, fmt.Errorf("header %s %q is not RUN/SEQ/ACCOUNT", batchHeader, b)
		}
		extra++
	}
	if id, ok := h[idHeader]; ok {
		if len(id) != 64 {
			return nil, fmt.Errorf("header %s %q is not a record id", idHeader, id)
		}
		extra++
	}
	if v, ok := h[snapshotHeader]; ok {
		if v != "true" {
			return nil, fmt.Errorf("header %s %q, want true", snapshotHeader, v)
		}
		extra++
	}
	if len(m.Headers)%2 != 0 || len(h) != len(want)+extra {
		return nil, fmt.Errorf("headers %q, want exactly %q", m.Headers, want)
	}
	for _, k := range want {
		if _, ok := h[k]; !ok {
			return nil, fmt.Errorf("header %q missing: %q", k, m.Headers)
		}
	}
	if h["content-type"] != contentType {
		return nil, fmt.Errorf("content-type %q", h["content-type"])
	}
	for _, k := range []string{"time", "window_start", "window_end", "fetched_at"} {
		tm, err := time.Parse(time.RFC3339Nano, h[k])
		if err != nil || record.FormatTime(tm) != h[k] {
			return nil, fmt.Errorf("header %s %q is not RFC 3339 UTC with milliseconds", k, h[k])
		}
	}
	return h, nil
}

// Checked is one record of a topic after CheckEnvelope: its envelope's
// fields, or what is wrong with it.
type Checked struct {
	ID, Source, Account, Time string
	// Snapshot marks an inventory walk's record: an agent's state, in no
	// window the simulator's truth counts.
	Snapshot bool
	Err      error
}

// CheckEnvelope checks one record of format envelope: the value is an
// envelope whose id is the key (or, keyed by its entity, the header id,
// the key then its account and entity) and the C7 id of its record, the
// headers are exactly the documented ones and equal the envelope's fields,
// and the topic is topicOf(the envelope's source).
func CheckEnvelope(m *Message, topicOf func(source string) string) Checked {
	where := fmt.Sprintf("%s/%d@%d", m.Topic, m.Partition, m.Offset)
	fail := func(format string, args ...any) Checked {
		return Checked{Err: fmt.Errorf(where+": "+format, args...)}
	}
	if m.Key == nil || m.Value == nil {
		return fail("no key or no value")
	}
	h, err := HeadersOf(m)
	if err != nil {
		return fail("%v", err)
	}
	if want := topicOf(h["source"]); m.Topic != want {
		return fail("record of %s/%s in topic %s, want %s", h["source"], h["account"], m.Topic, want)
	}
	// The message timestamp is the record time (sink.kafka.timestamp
	// record, the default).
	if ts, err := time.Parse(time.RFC3339Nano, h["time"]); err != nil || ts.UnixMilli() != m.Timestamp {
		return fail("message timestamp %d, want the record time %s (%v)", m.Timestamp, h["time"], err)
	}
	id, byEntity := h[idHeader]
	if !byEntity {
		id = string(m.Key)
	}
	// Fast path: the envelope as record.Envelope.AppendJSON lays it out,
	// with exactly the id and the headers as its fields; only the record
	// is parsed (canonicalized for its id, which also proves it one JSON
	// value). Anything else takes the general path below.
	prefix := `{"id":"` + id + `","source":"` + h["source"] + `","account":"` + h["account"] +
		`","time":"` + h["time"] + `","window_start":"` + h["window_start"] + `","window_end":"` + h["window_end"] +
		`","fetched_at":"` + h["fetched_at"] + `","record":`
	snap := h[snapshotHeader] == "true"
	if snap {
		prefix = strings.TrimSuffix(prefix, `","record":`) + `","snapshot":true,"record":`
	}
	if v := m.Value; len(v) > len(prefix) && string(v[:len(prefix)]) == prefix && v[len(v)-1] == '}' {
		rec := v[len(prefix) : len(v)-1]
		if got, err := record.ID(h["source"], rec); err != nil || got != id {
			return fail("id %s is not the C7 id of the envelope's record (%s, %v)", id, got, err)
		}
		if err := checkEntityKey(m, byEntity, h["account"], id); err != nil {
			return fail("%v", err)
		}
		return Checked{ID: id, Source: h["source"], Account: h["account"], Time: h["time"], Snapshot: snap}
	}
	var e struct {
		ID, Source, Account, Time string
		WindowStart               string          `json:"window_start"`
		WindowEnd                 string          `json:"window_end"`
		FetchedAt                 string          `json:"fetched_at"`
		Snapshot                  bool            `json:"snapshot"`
		Record                    json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(m.Value, &e); err != nil {
		return fail("value is not an envelope: %v: %.300s", err, m.Value)
	}
	if id != e.ID {
		return fail("key %q (id header %v), envelope id %q", m.Key, byEntity, e.ID)
	}
	if err := checkEntityKey(m, byEntity, e.Account, id); err != nil {
		return fail("%v", err)
	}
	if id, err := record.ID(e.Source, e.Record); err != nil || id != e.ID {
		return fail("envelope id %s is not the C7 id of its record (%s, %v)", e.ID, id, err)
	}
	for k, v := range map[string]string{"source": e.Source, "account": e.Account, "time": e.Time,
		"window_start": e.WindowStart, "window_end": e.WindowEnd, "fetched_at": e.FetchedAt} {
		if h[k] != v {
			return fail("header %s=%q, envelope %s=%q", k, h[k], k, v)
		}
	}
	if e.Snapshot != snap {
		return fail("header snapshot %v, envelope snapshot %v", snap, e.Snapshot)
	}
	return Checked{ID: e.ID, Source: e.Source, Account: e.Account, Time: e.Time, Snapshot: snap}
}

// checkEntityKey checks the key of a record with an id header (keyed by
// its entity, sink.kafka.keys): its account, '%' and '/' escaped as %25
// and %2F, then '/' and the entity (the mids and uuids themselves are
// TestKafkaEntityKeysReadBackWithKcat's), or the id for a record without
// its entity member.
func checkEntityKey(m *Message, byEntity bool, account, id string) error {
	if !byEntity || string(m.Key) == id {
		return nil
	}
	acc := strings.NewReplacer("%", "%25", "/", "%2F").Replace(account)
	if entity, ok := strings.CutPrefix(string(m.Key), acc+"/"); !ok || entity == "" {
		return fmt.Errorf("key %q of a record keyed by entity is not its account %q, '/' and the entity", m.Key, account)
	}
	return nil
}

// ReadEnvelopeTopics reads topics (format envelope) with kcat (Consume),
// checks every record (CheckEnvelope) on GOMAXPROCS workers, and collects
// them; the first bad record fails tb.
func ReadEnvelopeTopics(tb testing.TB, addr string, topics []string, topicOf func(source string) string) *harness.Output {
	tb.Helper()
	return readEnvelopeTopics(tb, addr, topics, topicOf, Consume)
}

// ReadCommittedEnvelopeTopics is ReadEnvelopeTopics for topics written
// with transactions (ConsumeCommitted: kcat with read_committed).
func ReadCommittedEnvelopeTopics(tb testing.TB, addr string, topics []string, topicOf func(source string) string) *harness.Output {
	tb.Helper()
	return readEnvelopeTopics(tb, addr, topics, topicOf, ConsumeCommitted)
}

func readEnvelopeTopics(tb testing.TB, addr string, topics []string, topicOf func(source string) string,
	consume func(tb testing.TB, addr string, topics []string, fn func(m *Message)) int) *harness.Output {
	tb.Helper()
	jobs := make(chan *Message, 512)
	results := make(chan Checked, 512)
	var workers sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		workers.Go(func() {
			for m := range jobs {
				results <- CheckEnvelope(m, topicOf)
			}
		})
	}
	out := harness.NewOutput()
	var firstErr error
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for r := range results {
			if r.Err != nil {
				if firstErr == nil {
					firstErr = r.Err
				}
				continue
			}
			tm, err := time.Parse(time.RFC3339Nano, r.Time)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("record %s: time %q: %v", r.ID, r.Time, err)
			}
			if r.Snapshot {
				out.Snapshots++ // in no window the truth counts
				continue
			}
			out.Add(record.Stream{Source: r.Source, Account: r.Account}, r.ID, tm)
		}
	}()
	stop := func() { close(jobs); workers.Wait(); close(results); <-collected }
	stopped := false
	defer func() { // Consume may fail the test: end the workers anyway
		if !stopped {
			stop()
		}
	}()
	consume(tb, addr, topics, func(m *Message) { jobs <- m })
	stopped = true
	stop()
	if firstErr != nil {
		tb.Fatal(firstErr)
	}
	return out
}
