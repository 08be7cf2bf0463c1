package kafka_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/ocsf/ocsftest"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// Format ocsf, read back from the broker: every record's value is the OCSF
// 1.3.0 event of its envelope, valid per the vendored schema (raw_data
// when asked for), the key is the record id (agents and alerts: their
// account and entity, the id in the header id), the headers are the
// documented ones with the OCSF content-type, and no value was a
// fallback.
func TestOCSFFormatDeliversValidEventsWithKeyAndHeaders(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	envs := ocsftest.Envelopes(t)
	s := ocsftest.Load(t)
	for _, rawData := range []bool{false, true} {
		topic := "ocsf-raw.{source}"
		if !rawData {
			topic = "ocsf.{source}"
		}
		cfg := testConfig(c)
		cfg.Format, cfg.OCSF.RawData, cfg.Topic, cfg.CreateTopics = kafka.FormatOCSF, rawData, topic, true
		reg := prometheus.NewRegistry()
		snk, _ := startSink(t, cfg, nil, reg)
		var topics []string
		byID := map[string]*record.Envelope{}
		for i := 0; i < len(envs); {
			j := i
			for j < len(envs) && envs[j].Source == envs[i].Source && envs[j].Account == envs[i].Account {
				j++
			}
			write(t, snk, &record.Batch{Source: envs[i].Source, Account: envs[i].Account, Envelopes: envs[i:j]})
			if i == 0 || envs[i].Source != envs[i-1].Source {
				topics = append(topics, "ocsf."+envs[i].Source)
				if rawData {
					topics[len(topics)-1] = "ocsf-raw." + envs[i].Source
				}
			}
			for k := i; k < j; k++ {
				byID[envs[k].ID] = &envs[k]
			}
			i = j
		}
		got := kafkatest.ReadAll(t, c.ListenAddrs(), topics)
		if len(got) != len(envs) {
			t.Fatalf("raw_data=%v: read %d records, wrote %d", rawData, len(got), len(envs))
		}
		for _, r := range got {
			id, byEntity := kafkatest.Header(r, kafkarecord.HeaderID)
			if !byEntity {
				id = string(r.Key)
			}
			e := byID[id]
			if e == nil {
				t.Fatalf("key %s (id header %q) names no record", r.Key, id)
			}
			want, ok := kafkarecord.EntityKeyOf(e.Source, e.Account, e.Record)
			if !ok || cfg.KeyOf(e.Source) != kafka.KeyEntity {
				want = e.ID
			}
			if string(r.Key) != want || byEntity != (cfg.KeyOf(e.Source) == kafka.KeyEntity) {
				t.Errorf("%s record %s: key %s (id header %v), want %s", e.Source, e.ID, r.Key, byEntity, want)
			}
			if ct := header(t, r, kafkarecord.HeaderContentType); ct != kafkarecord.ContentTypeOCSF {
				t.Errorf("content-type %q, want %q", ct, kafkarecord.ContentTypeOCSF)
			}
			for k, want := range map[string]string{kafkarecord.HeaderSource: e.Source, kafkarecord.HeaderAccount: e.Account,
				kafkarecord.HeaderTime: record.FormatTime(e.Time), kafkarecord.HeaderFetchedAt: record.FormatTime(e.FetchedAt)} {
				if v := header(t, r, k); v != want {
					t.Errorf("%s: header %s=%q, want %q", e.ID, k, v, want)
				}
			}
			for _, msg := range s.CheckEvent(r.Value, e, rawData) {
				t.Errorf("%s %s: %s\n%s", e.Source, e.ID, msg, r.Value)
			}
		}
		if v := gather(t, reg)[`collector_sink_records_total{sink="kafka"}`]; v != float64(len(envs)) {
			t.Errorf("collector_sink_records_total = %v, want %d", v, len(envs))
		}
		for k, v := range gather(t, reg) {
			if v != 0 && strings.HasPrefix(k, "collector_ocsf_fallbacks_total") {
				t.Errorf("%s = %v for the simulator's records, want none", k, v)
			}
		}
	}
}

// A record the OCSF mapping can never take (a source without a class)
// fails its batch with a permanent error before anything is produced.
func TestOCSFUnmappableBatchIsPermanent(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	cfg := testConfig(c)
	cfg.Format, cfg.CreateTopics = kafka.FormatOCSF, true
	reg := prometheus.NewRegistry()
	snk, _ := startSink(t, cfg, nil, reg)
	b := makeBatch(t, "no_such_source", "acme", 0, 0, 3, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := snk.Write(ctx, b)
	if err == nil || !sink.IsPermanent(err) {
		t.Fatalf("Write = %v, want a permanent error", err)
	}
	if v := gather(t, reg)[`collector_sink_errors_total{kind="invalid",sink="kafka"}`]; v != 1 {
		t.Errorf("collector_sink_errors_total{kind=invalid} = %v, want 1 (%v)", v, gather(t, reg))
	}
	if n := len(kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.no_such_source"})); n != 0 {
		t.Errorf("%d records produced", n)
	}
}
