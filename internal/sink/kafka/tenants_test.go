package kafka_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// tenantBatch is makeBatch of the stream of tenant: the same records, the
// same ids, as any other tenant's batch of the same arguments.
func tenantBatch(t *testing.T, tenant, source, account string, n int) *record.Batch {
	t.Helper()
	b := makeBatch(t, source, account, 0, 0, n, 10)
	b.Tenant = tenant
	for i := range b.Envelopes {
		b.Envelopes[i].Tenant = tenant
	}
	return b
}

// Issue 32: two tenants' byte-identical records are both stored, each
// once: in a topic of their own with {tenant}, or in one shared topic,
// where each names its tenant (envelope and header tenant) and an entity
// key starts with it, so that compaction never lets one tenant's agent
// erase another's. The one-tenant form is written as before: no tenant
// header, no tenant in the envelope or the key.
func TestTenantsAreKeptApartInKafka(t *testing.T) {
	t.Parallel()
	t.Run("topic per tenant", func(t *testing.T) {
		t.Parallel()
		c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.alpha.dns", "svc.beta.dns"))
		cfg := testConfig(c)
		cfg.Topic = "svc.{tenant}.{source}"
		streams := []record.Stream{{Tenant: "alpha", Source: "dns", Account: "acme"}, {Tenant: "beta", Source: "dns", Account: "acme"}}
		s, _ := startSink(t, cfg, streams, prometheus.NewRegistry())
		a, b := tenantBatch(t, "alpha", "dns", "acme", 30), tenantBatch(t, "beta", "dns", "acme", 30)
		write(t, s, a)
		write(t, s, b)
		for _, tc := range []struct {
			topic, tenant string
			batch         *record.Batch
		}{{"svc.alpha.dns", "alpha", a}, {"svc.beta.dns", "beta", b}} {
			got := byKey(t, kafkatest.ReadAll(t, c.ListenAddrs(), []string{tc.topic}), true)
			if len(got) != 30 {
				t.Fatalf("%s holds %d records, want 30", tc.topic, len(got))
			}
			for _, e := range tc.batch.Envelopes {
				r, ok := got[e.ID]
				if !ok {
					t.Fatalf("%s lacks %s", tc.topic, e.ID)
				}
				if h := header(t, r, kafkarecord.HeaderTenant); h != tc.tenant {
					t.Errorf("%s: header tenant %q, want %q", e.ID, h, tc.tenant)
				}
				if want := `{"id":"` + e.ID + `","tenant":"` + tc.tenant + `","source":"dns"`; string(r.Value[:len(want)]) != want {
					t.Errorf("value starts %.80s, want %s", r.Value, want)
				}
			}
		}
		if a.Envelopes[0].ID != b.Envelopes[0].ID {
			t.Fatal("the tenants' records differ: the test proves nothing")
		}
	})
	t.Run("one topic, entity keys", func(t *testing.T) {
		t.Parallel()
		c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.agent_info"))
		cfg := testConfig(c)
		if cfg.KeyOf("agent_info") != kafka.KeyEntity {
			t.Fatal("agent_info is not keyed by entity by default")
		}
		streams := []record.Stream{{Tenant: "alpha", Source: "agent_info", Account: "acme"}, {Tenant: "beta", Source: "agent_info", Account: "acme"}, {Source: "agent_info", Account: "acme"}}
		s, _ := startSink(t, cfg, streams, prometheus.NewRegistry())
		var bld record.Builder
		raw := []byte(`{"createdTime":"2026-11-20T00:00:01.000Z","mid":"m1"}`)
		for _, tenant := range []string{"alpha", "beta", ""} {
			e, _ := bld.Build("agent_info", "acme", "createdTime", testWindowStart, testWindowEnd, testFetchedAt, raw)
			e.Tenant = tenant
			write(t, s, &record.Batch{Tenant: tenant, Source: "agent_info", Account: "acme", WindowStart: testWindowStart, WindowEnd: testWindowEnd, Envelopes: []record.Envelope{e}})
		}
		got := byKey(t, kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.agent_info"}), true)
		for key, tenant := range map[string]string{"alpha/acme/m1": "alpha", "beta/acme/m1": "beta", "acme/m1": ""} {
			r, ok := got[key]
			if !ok {
				t.Fatalf("no record keyed %q among %d", key, len(got))
			}
			if h, _ := kafkatest.Header(r, kafkarecord.HeaderTenant); h != tenant {
				t.Errorf("%s: header tenant %q, want %q", key, h, tenant)
			}
		}
	})
}
