package kafkaharness

import (
	"slices"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/record"
)

// The record checks of the read-back accept an envelope in any member
// order (general path) as in the sink's own layout (fast path), and reject
// a header, key or topic that disagrees with the value.
func TestKafkaEnvelopeCheckOfTheReadBack(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"createdTime": "2026-11-20T10:00:00.123Z", "name": "x.example", "n": 1}`)
	id, err := record.ID("dns", raw)
	if err != nil {
		t.Fatal(err)
	}
	headers := []string{"source", "dns", "account", "acme", "time", "2026-11-20T10:00:00.123Z",
		"window_start", "2026-11-20T00:00:00.000Z", "window_end", "2026-11-21T00:00:00.000Z",
		"fetched_at", "2026-11-22T00:00:00.000Z", "content-type", "application/json"}
	sinkLayout := `{"id":"` + id + `","source":"dns","account":"acme","time":"2026-11-20T10:00:00.123Z",` +
		`"window_start":"2026-11-20T00:00:00.000Z","window_end":"2026-11-21T00:00:00.000Z","fetched_at":"2026-11-22T00:00:00.000Z","record":` + string(raw) + `}`
	reordered := `{"record":` + string(raw) + `, "account":"acme","source":"dns","id":"` + id + `","time":"2026-11-20T10:00:00.123Z",` +
		`"window_end":"2026-11-21T00:00:00.000Z","window_start":"2026-11-20T00:00:00.000Z","fetched_at":"2026-11-22T00:00:00.000Z"}`
	topicOf := func(src string) string { return "svc." + src }
	msg := func(value string, hdrs []string) *Message {
		return &Message{Topic: "svc.dns", Key: []byte(id), Value: []byte(value), Headers: hdrs, Timestamp: 1795168800123} // the record time
	}
	for _, v := range []string{sinkLayout, reordered} {
		if r := CheckEnvelope(msg(v, headers), topicOf); r.Err != nil || r.ID != id || r.Account != "acme" {
			t.Errorf("valid envelope refused: %+v\n%s", r, v)
		}
	}
	badHeader := slices.Clone(headers)
	badHeader[9] = "2026-11-20T00:00:00.000Z" // window_end
	wrongKey := msg(sinkLayout, headers)
	wrongKey.Key = []byte(strings.Repeat("0", 64))
	otherTopic := msg(sinkLayout, headers)
	otherTopic.Topic = "svc.connections"
	fetchTime := msg(sinkLayout, headers)
	fetchTime.Timestamp = 1795305600000 // fetched_at, not the record time
	for name, m := range map[string]*Message{
		"header": msg(sinkLayout, badHeader), "header, reordered": msg(reordered, badHeader),
		"key": wrongKey, "topic": otherTopic, "timestamp": fetchTime, "missing header": msg(sinkLayout, headers[:12]),
		"record":   msg(strings.Replace(sinkLayout, `"n": 1`, `"n": 2`, 1), headers),
		"trailing": msg(sinkLayout+" x", headers),
	} {
		if r := CheckEnvelope(m, topicOf); r.Err == nil {
			t.Errorf("%s: a bad record passed the checks", name)
		}
	}

	// Keyed by entity (sink.kafka.keys): the id in the header id, the key
	// the account and the entity.
	withID := append(slices.Clone(headers), "id", id)
	entity := msg(sinkLayout, withID)
	entity.Key = []byte("acme/x.example")
	if r := CheckEnvelope(entity, topicOf); r.Err != nil || r.ID != id {
		t.Errorf("valid entity-keyed envelope refused: %+v", r)
	}
	for name, key := range map[string]string{"no account": "x.example", "another account": "acme-dev/x.example", "no entity": "acme/"} {
		m := msg(sinkLayout, withID)
		m.Key = []byte(key)
		if r := CheckEnvelope(m, topicOf); r.Err == nil {
			t.Errorf("entity key %s (%q) passed the checks", name, key)
		}
	}
}
