package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// TestOnlyABatchTheBrokerRefusesForGoodIsPermanent writes, as a user the
// cluster's ACLs restrict, to topics it may write, may only describe, or
// may not see, and to topics that do not exist or cannot exist: only the
// refusals that no repeat can change are permanent.
func TestOnlyABatchTheBrokerRefusesForGoodIsPermanent(t *testing.T) {
	t.Parallel()
	topic := func(name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	c := kafkatest.NewCluster(t, kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin"),
		kfake.User("SCRAM-SHA-256", "writer", "pw",
			topic("svc.dns", kmsg.ACLOperationDescribe), topic("svc.dns", kmsg.ACLOperationWrite),
			topic("svc.audit_logs", kmsg.ACLOperationDescribe),  // may see it, not write to it
			topic("svc.connections", kmsg.ACLOperationDescribe), // missing, and no create_topics
		),
		kfake.SeedTopics(1, "svc.dns", "svc.audit_logs", "svc.user_logins"))
	cfg := testConfig(c)
	cfg.SASL = kafkasasl.Config{Mechanism: "SCRAM-SHA-256", Username: "writer", Password: secret.New("pw")}
	reg := prometheus.NewRegistry()
	s, _ := startSink(t, cfg, []record.Stream{{Source: "dns", Account: "acme"}}, reg)
	write(t, s, makeBatch(t, "dns", "acme", 0, 0, 5, 10))

	for _, tt := range []struct {
		name   string
		source string
		is     error
	}{
		{"no Write permission on the topic", "audit_logs", kerr.TopicAuthorizationFailed},
		{"a topic the user may not see", "user_logins", kerr.TopicAuthorizationFailed},
		{"a missing topic without create_topics", "connections", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			err := s.Write(ctx, makeBatch(t, tt.source, "acme", 0, 0, 3, 10))
			if !sink.IsPermanent(err) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("Write = %v, want a permanent error (%v)", err, tt.is)
			}
			t.Logf("%v", err)
		})
	}
	// The permitted stream still delivers: permanence is the batch's, not
	// the sink's.
	write(t, s, makeBatch(t, "dns", "acme", 1, 5, 5, 10))
	if got := gather(t, reg)[`collector_sink_records_total{sink="kafka"}`]; got != 10 {
		t.Errorf("collector_sink_records_total = %v, want 10", got)
	}
}

// TestAnswersNoRepeatCanChangeArePermanent: a topic name the broker
// refuses (Kafka refuses ".." with INVALID_TOPIC_EXCEPTION; kfake takes any
// name, so it is told to answer as Kafka does) and records the broker
// refuses with INVALID_RECORD.
func TestAnswersNoRepeatCanChangeArePermanent(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.dns"))
	cfg := testConfig(c)
	cfg.Topic = "{source}"
	cfg.CreateTopics = true
	s, _ := startSink(t, cfg, nil, nil)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: "..", Err: kerr.InvalidTopicException, Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := s.Write(ctx, makeBatch(t, "..", "acme", 0, 0, 1, 10))
	if !sink.IsPermanent(err) || !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("Write to topic \"..\" = %v, want a permanent INVALID_TOPIC_EXCEPTION", err)
	}

	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "svc.dns", Err: kerr.InvalidRecord, Count: -1})
	err = s.Write(ctx, makeBatch(t, "svc.dns", "acme", 0, 0, 3, 10))
	if !sink.IsPermanent(err) || !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("Write refused with INVALID_RECORD = %v, want it permanent", err)
	}
}

// TestFailuresThatMayPassAreNotPermanent: a broker that answers with a
// retriable error until the delivery timeout, and a cluster that went away,
// fail the Write with errors the pipeline retries.
func TestFailuresThatMayPassAreNotPermanent(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.dns"))
	cfg := testConfig(c)
	s, err := kafka.New(cfg, []record.Stream{{Source: "dns", Account: "acme"}}, t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, s, makeBatch(t, "dns", "acme", 0, 0, 5, 10))

	stalled := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	short, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	if err := s.Write(short, makeBatch(t, "dns", "acme", 1, 5, 5, 10)); err == nil || sink.IsPermanent(err) {
		t.Errorf("Write while the broker lacks replicas = %v, want a transient error", err)
	}
	stalled.Remove()

	c.Close()
	short, cancel3 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel3()
	if err := s.Write(short, makeBatch(t, "dns", "acme", 2, 10, 5, 10)); err == nil || sink.IsPermanent(err) {
		t.Errorf("Write to a closed cluster = %v, want a transient error", err)
	}
	short, cancel4 := context.WithTimeout(ctx, time.Second)
	defer cancel4()
	_ = s.Shutdown(short) // records of a closed cluster stay unflushed
}
