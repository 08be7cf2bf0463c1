package verify_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/testinfra/chtest"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
	"github.com/svcexport/collector/internal/verify"
)

// withTenant is a copy of b read for tenant.
func withTenant(b *record.Batch, tenant string) *record.Batch {
	c := *b
	c.Tenant = tenant
	c.Envelopes = make([]record.Envelope, len(b.Envelopes))
	copy(c.Envelopes, b.Envelopes)
	for i := range c.Envelopes {
		c.Envelopes[i].Tenant = tenant
	}
	return &c
}

// tenantScenario is the scenario read for tenant "globex" (its two gaps),
// and for tenant "acme-corp" the same records, byte for byte, and also
// the 7 audit logs globex misses (which globex has as snapshots only): a count that mixed the tenants would
// fill globex's gap with acme-corp's copies.
func tenantScenario(t *testing.T) (*scenario, []*record.Batch) {
	s := newScenario(t)
	var out []*record.Batch
	var bld record.Builder
	a := s.from.Add(verify.Day)
	for _, b := range s.batches {
		out = append(out, withTenant(b, "globex"))
		if !b.Envelopes[0].Snapshot {
			out = append(out, withTenant(b, "acme-corp"))
		} else {
			// As records, not snapshots. (Not both: an insert of the
			// same ids into one ClickHouse table passes for a repeat,
			// its deduplication token being made of the ids.)
			full := &record.Batch{Tenant: "acme-corp", Source: logins.Source, Account: logins.Account, WindowStart: a, WindowEnd: a.Add(verify.Day)}
			for _, e := range b.Envelopes {
				e, _ := bld.Build(logins.Source, logins.Account, "createdTime", a, a.Add(verify.Day), a.Add(verify.Day+time.Hour), e.Record)
				e.Tenant = "acme-corp"
				full.Envelopes = append(full.Envelopes, e)
			}
			out = append(out, full)
		}
	}
	return s, out
}

// checkTenant runs verify of tenant globex's streams on d and wants
// exactly its two gaps; then of acme-corp's, which has one fewer.
func (s *scenario) checkTenant(t *testing.T, d verify.Delivered) {
	t.Helper()
	for tn, want := range map[string]map[string]int64{
		"globex":    {"audit_logs 1": 7, "edge_alerts 0": 3},
		"acme-corp": {"edge_alerts 0": 3},
	} {
		l, e := logins, alerts
		l.Tenant, e.Tenant = tn, tn
		p := verify.NewPlan([]verify.StreamInfo{
			{Stream: l, Start: s.from, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: s.wm}}},
			{Stream: e, Edge: true, Start: s.from, State: checkpoint.State{Cursor: cursor.Cursor{Watermark: s.wm}}},
		}, verify.Filter{}, verify.Limits{Now: time.Now()})
		truth := s.truth()
		r, err := verify.Run(context.Background(), p, verify.CounterFunc(func(ctx context.Context, k record.Stream, start, end time.Time) (int64, error) {
			k.Tenant = ""
			return truth.Count(ctx, k, start, end)
		}), d)
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range r.Rows {
			k := fmt.Sprintf("%s %d", row.Source, i%3)
			if row.Tenant != tn || row.API-row.Delivered != want[k] {
				t.Errorf("tenant %s %s: row of tenant %q, API %d, delivered %d; want %d missing", tn, k, row.Tenant, row.API, row.Delivered, want[k])
			}
		}
		if len(r.Rows) != 6 || r.Gaps != len(want) {
			t.Errorf("tenant %s: %d rows, %d gaps; want 6 rows, %d gaps", tn, len(r.Rows), r.Gaps, len(want))
		}
	}
}

// deliverAll writes batches through sk between its Start and Shutdown.
func deliverAll(t *testing.T, sk sink.Sink, batches []*record.Batch) {
	t.Helper()
	ctx := context.Background()
	if err := sk.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := sk.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := sk.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// Issue 32: each sink's count keeps tenants apart. Two tenants hold the
// same records (the same ids), one of them also the records the other
// misses: verify of each finds its own gaps, in the file sink (a directory
// per tenant), Kafka (one topic for both: the tenant header) and ClickHouse
// (the tenant column).
func TestVerifyCountsEachTenantApartInEverySink(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		s, batches := tenantScenario(t)
		cfg := file.DefaultConfig()
		cfg.Dir, cfg.Path, cfg.Fsync = t.TempDir(), file.TenantsPath, false
		sk, err := file.New(cfg, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		deliverAll(t, sk, batches)
		s.checkTenant(t, verify.FileSink{Dir: cfg.Dir, Path: cfg.Path})
	})
	t.Run("kafka", func(t *testing.T) {
		s, batches := tenantScenario(t)
		cluster := kafkatest.NewCluster(t)
		cfg := kafka.DefaultConfig()
		cfg.Brokers = cluster.ListenAddrs()
		cfg.CreateTopics = true
		cfg.Topic = "all.{source}"
		var streams []record.Stream
		for _, tn := range []string{"globex", "acme-corp"} {
			l, e := logins, alerts
			l.Tenant, e.Tenant = tn, tn
			streams = append(streams, l, e)
		}
		sk, err := kafka.New(cfg, streams, t.TempDir(), prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		deliverAll(t, sk, batches)
		s.checkTenant(t, verify.Kafka{Opts: []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}, Topics: []string{"all.audit_logs", "all.edge_alerts"}})
	})
	t.Run("clickhouse", func(t *testing.T) {
		s, batches := tenantScenario(t)
		srv := chtest.Get(t)
		db := srv.NewDatabase(t)
		cfg := clickhouse.DefaultConfig()
		cfg.Addr, cfg.Database, cfg.FlushInterval = []string{srv.Native}, db, 20*time.Millisecond
		sk, err := clickhouse.New(cfg, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		deliverAll(t, sk, batches)
		conn, err := ch.Open(&ch.Options{Addr: []string{srv.Native}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		s.checkTenant(t, verify.ClickHouse{Conn: conn, Names: schema.Options{Database: db}})
	})
}
