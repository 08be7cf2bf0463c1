package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/harness/kafkaharness"
)

// sink.kafka.key entity, read back with kcat: an edge alert's key is its
// uuid and an agent's its mid (one partition each, in order, compactable),
// the record id travels in the header id, and the message timestamp is the
// record time (sink.kafka.timestamp record).
func TestKafkaEntityKeysReadBackWithKcat(t *testing.T) {
	t.Parallel()
	kafkaharness.KcatBin(t)
	sim := harness.StartSim(t, harness.QuickRates)
	sources := []string{"edge_alerts", "agent_info"}
	topics := []string{"svc.edge_alerts.edge", "svc.agent_info.acme"}
	broker := kafkaharness.StartBroker(t, 0, "--seed-topics", strings.Join(topics, ","), "--default-partitions", "3")
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Accounts: []string{"acme"}, Sources: sources, Interval: harness.Omit,
		Sink: kafkaharness.SinkYAML(broker.Addr, "key: entity", "topic: svc.{source}.{account}")})
	c.RunOnce(t, 2*time.Minute)

	partOf := map[string]int32{} // entity -> its partition
	n := map[string]int{}
	kafkaharness.Consume(t, broker.Addr, topics, func(m *kafkaharness.Message) {
		h := map[string]string{}
		for i := 0; i+1 < len(m.Headers); i += 2 {
			h[m.Headers[i]] = m.Headers[i+1]
		}
		var env struct {
			ID, Source, Time string
			Record           map[string]json.RawMessage
		}
		if err := json.Unmarshal(m.Value, &env); err != nil {
			t.Fatalf("%s/%d@%d: %v", m.Topic, m.Partition, m.Offset, err)
		}
		member := map[string]string{"edge_alerts": "uuid", "agent_info": "mid"}[env.Source]
		var want string
		if raw := env.Record[member]; len(raw) > 0 && raw[0] == '"' {
			_ = json.Unmarshal(raw, &want)
		} else {
			want = string(raw)
		}
		if want == "" || string(m.Key) != want {
			t.Fatalf("%s record %s: key %q, want its %s %q", env.Source, env.ID, m.Key, member, want)
		}
		if h["id"] != env.ID {
			t.Fatalf("%s record %s: header id %q", env.Source, env.ID, h["id"])
		}
		if ts, err := time.Parse(time.RFC3339Nano, env.Time); err != nil || ts.UnixMilli() != m.Timestamp {
			t.Fatalf("%s record %s: timestamp %d, want its time %s", env.Source, env.ID, m.Timestamp, env.Time)
		}
		k := m.Topic + "/" + string(m.Key)
		if p, seen := partOf[k]; seen && p != m.Partition {
			t.Fatalf("entity %s on partitions %d and %d", k, p, m.Partition)
		}
		partOf[k] = m.Partition
		n[env.Source]++
	})
	if n["edge_alerts"] == 0 || n["agent_info"] == 0 {
		t.Fatalf("records read back: %v", n)
	}
	var ids []string
	for k := range partOf {
		ids = append(ids, k)
	}
	t.Logf("%v records, %d entities, each on one partition (e.g. %s)", n, len(partOf), strconv.Quote(ids[0]))

}
