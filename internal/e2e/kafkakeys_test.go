package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/harness/kafkaharness"
)

// Message keys by default (sink.kafka.key id, sink.kafka.keys agent_info
// and edge_alerts entity), read back with kcat from the default topics
// svc.{source}, which hold both accounts: an agent's key is its account
// and mid, an edge alert's its account and uuid (one partition each, in
// order, compactable), the record id travels in the header id, and a DNS
// record keeps its id as the key (no id header). The simulator gives both
// accounts the same mids (issue 29: keyed by mid alone, every agent key
// stood for two agents, and a compacted topic kept one of them): each
// (account, mid) must be a key of its own.
func TestKafkaEntityKeysReadBackWithKcat(t *testing.T) {
	t.Parallel()
	kafkaharness.KcatBin(t)
	sim := harness.StartSim(t, harness.QuickRates)
	sources := []string{"edge_alerts", "agent_info", "dns"}
	topics := kafkaharness.Topics(sources, "svc.")
	broker := kafkaharness.StartBroker(t, 0, "--seed-topics", strings.Join(topics, ","), "--default-partitions", "3")
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	accounts := []string{"acme", "acme-dev"}
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Accounts: accounts, Sources: sources, Interval: harness.Omit,
		Sink: kafkaharness.SinkYAML(broker.Addr)})
	c.RunOnce(t, 2*time.Minute)

	partOf := map[string]int32{}                  // topic/key -> its partition
	keyOf := map[string]map[string]string{}       // agent_info mid -> account -> key
	accountsOfKey := map[string]map[string]bool{} // agent_info key -> accounts
	n := map[string]int{}
	kafkaharness.Consume(t, broker.Addr, topics, func(m *kafkaharness.Message) {
		h, err := kafkaharness.HeadersOf(m)
		if err != nil {
			t.Fatalf("%s/%d@%d: %v", m.Topic, m.Partition, m.Offset, err)
		}
		var env struct {
			ID, Source, Account, Time string
			Record                    map[string]json.RawMessage
		}
		if err := json.Unmarshal(m.Value, &env); err != nil {
			t.Fatalf("%s/%d@%d: %v", m.Topic, m.Partition, m.Offset, err)
		}
		if ts, err := time.Parse(time.RFC3339Nano, env.Time); err != nil || ts.UnixMilli() != m.Timestamp {
			t.Fatalf("%s record %s: timestamp %d, want its time %s", env.Source, env.ID, m.Timestamp, env.Time)
		}
		n[env.Source]++
		member := map[string]string{"edge_alerts": "uuid", "agent_info": "mid"}[env.Source]
		if member == "" {
			if string(m.Key) != env.ID || h["id"] != "" {
				t.Fatalf("%s record %s: key %q, id header %q; want the id as the key and no id header", env.Source, env.ID, m.Key, h["id"])
			}
			return
		}
		var entity string
		if raw := env.Record[member]; len(raw) > 0 && raw[0] == '"' {
			_ = json.Unmarshal(raw, &entity)
		} else {
			entity = string(raw)
		}
		if want := env.Account + "/" + entity; entity == "" || string(m.Key) != want {
			t.Fatalf("%s record %s: key %q, want its account and %s %q", env.Source, env.ID, m.Key, member, want)
		}
		if h["id"] != env.ID {
			t.Fatalf("%s record %s: header id %q", env.Source, env.ID, h["id"])
		}
		k := m.Topic + "/" + string(m.Key)
		if p, seen := partOf[k]; seen && p != m.Partition {
			t.Fatalf("entity %s on partitions %d and %d", k, p, m.Partition)
		}
		partOf[k] = m.Partition
		if env.Source == "agent_info" {
			if keyOf[entity] == nil {
				keyOf[entity] = map[string]string{}
			}
			keyOf[entity][env.Account] = string(m.Key)
			if accountsOfKey[string(m.Key)] == nil {
				accountsOfKey[string(m.Key)] = map[string]bool{}
			}
			accountsOfKey[string(m.Key)][env.Account] = true
		}
	})
	if n["edge_alerts"] == 0 || n["agent_info"] == 0 || n["dns"] == 0 {
		t.Fatalf("records read back: %v", n)
	}
	twice := 0 // mids of both accounts: one key each before issue 29
	for mid, keys := range keyOf {
		if len(keys) == 2 {
			twice++
			if keys["acme"] == keys["acme-dev"] {
				t.Errorf("mid %s of acme and acme-dev under one key %q", mid, keys["acme"])
			}
		}
	}
	shared := 0
	for _, accs := range accountsOfKey {
		if len(accs) > 1 {
			shared++
		}
	}
	if twice == 0 || shared != 0 {
		t.Fatalf("%d mids under both accounts (want some, or the test means nothing), %d agent keys shared by both accounts (want 0)", twice, shared)
	}
	t.Logf("%v records; %d agent mids under both accounts, %d agent keys in all, 0 shared by two accounts; %d entities, each on one partition",
		n, twice, len(accountsOfKey), len(partOf))
}
