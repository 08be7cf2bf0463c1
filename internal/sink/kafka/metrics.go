package kafka

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// sinkName is the value of the "sink" label on shared metrics.
const sinkName = "kafka"

// Values of the "kind" label of collector_kafka_produce_errors_total and
// of collector_sink_errors_total{sink="kafka"} (which also has
// sinkhelper's state, write and dead_letter).
const (
	kindTooLarge     = "too_large"     // MESSAGE_TOO_LARGE from the producer or a broker
	kindTimeout      = "timeout"       // delivery timeout, request timeout
	kindCanceled     = "canceled"      // the Write's context ended
	kindAuth         = "auth"          // SASL, ACL or TLS refusal
	kindUnknownTopic = "unknown_topic" // topic missing at produce time
	kindBroker       = "broker"        // any other error code from a broker
	kindClosed       = "closed"        // the sink or client was shut down
	kindOther        = "other"         // network and everything else
	kindInvalid      = "invalid"       // format ocsf: a record the mapping can never take (permanent; Write errors only)
)

// Reasons of collector_dead_letters_total.
const reasonTooLarge = "too_large"

// metrics are the Kafka sink's own collector_kafka_* series; sinkhelper
// has the shared collector_sink_* ones.
type metrics struct {
	countBytes func(n int64) // adds to collector_sink_bytes_total{sink="kafka"}

	produced        *prometheus.CounterVec // topic
	bytesProduced   prometheus.Counter
	uncompressed    prometheus.Counter
	produceErrors   *prometheus.CounterVec // kind
	produceLatency  prometheus.Histogram
	bufferedRecords prometheus.GaugeFunc
	bufferedBytes   prometheus.GaugeFunc
	readBackRecords prometheus.Counter
	readBackSeconds prometheus.Counter
	txCommitted     prometheus.Counter
	txAborted       prometheus.Counter
}

// readBack counts a read-back of Recover: n records in d.
func (m *metrics) readBack(n int, d time.Duration) {
	m.readBackRecords.Add(float64(n))
	m.readBackSeconds.Add(d.Seconds())
}

// newMetrics registers the sink's series with reg (nil: none); the
// buffered gauges read client, and countBytes receives the bytes of every
// acknowledged batch. The gauges read this one sink's client, so a second
// Kafka sink on the same registry cannot share the series: any clash is an
// error.
func newMetrics(reg prometheus.Registerer, client *atomic.Pointer[kgo.Client], countBytes func(n int64)) (*metrics, error) {
	buffered := func(f func(*kgo.Client) int64) func() float64 {
		return func() float64 {
			if cl := client.Load(); cl != nil {
				return float64(f(cl))
			}
			return 0
		}
	}
	m := &metrics{
		countBytes: countBytes,
		produced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_kafka_records_produced_total",
			Help: "Records the brokers acknowledged, by topic (topics are sources x accounts at most).",
		}, []string{"topic"}),
		bytesProduced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_kafka_bytes_produced_total",
			Help: "Bytes of acknowledged record batches as sent (after compression).",
		}),
		uncompressed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_kafka_uncompressed_bytes_produced_total",
			Help: "Bytes of acknowledged record batches before compression (with collector_kafka_bytes_produced_total: the compression ratio).",
		}),
		produceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_kafka_produce_errors_total",
			Help: "Records the producer failed, by kind: too_large, timeout, canceled, auth, unknown_topic, broker, closed, other. Their batch is retried, or for a record too large on its own dead-lettered; records dead-lettered before producing are not counted here.",
		}, []string{"kind"}),
		produceLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "collector_kafka_produce_latency_seconds",
			Help:    "Time from the first record of a batch handed to the producer until the last one was acknowledged, for batches acknowledged in full.",
			Buckets: sinkhelper.DurationBuckets(),
		}),
		bufferedRecords: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "collector_kafka_buffered_records",
			Help: "Records held by the producer, not yet acknowledged by a broker.",
		}, buffered(func(cl *kgo.Client) int64 { return cl.BufferedProduceRecords() })),
		bufferedBytes: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "collector_kafka_buffered_bytes",
			Help: "Bytes (keys, values, headers) held by the producer, not yet acknowledged by a broker.",
		}, buffered(func(cl *kgo.Client) int64 { return cl.BufferedProduceBytes() })),
		readBackRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_kafka_read_back_records_total",
			Help: "Records a start read back from the partitions past the checkpoint's mark (delivery exactly_once): stored before a crash, they are not written again.",
		}),
		readBackSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_kafka_read_back_seconds_total",
			Help: "Time starts spent reading back what the partitions hold past the checkpoint's mark.",
		}),
		txCommitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_kafka_transactions_committed_total",
			Help: "Transactions committed (sink.kafka.transactional_id set): one per Write.",
		}),
		txAborted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_kafka_transactions_aborted_total",
			Help: "Transactions aborted or whose commit failed (sink.kafka.transactional_id set): their batch is retried whole.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.bufferedRecords, m.bufferedBytes, m.produced, m.bytesProduced, m.uncompressed, m.produceErrors, m.produceLatency, m.readBackRecords, m.readBackSeconds, m.txCommitted, m.txAborted} {
		if err := reg.Register(c); err != nil {
			if _, dup := errors.AsType[prometheus.AlreadyRegisteredError](err); dup {
				return nil, fmt.Errorf("kafka sink metrics: collector_kafka_buffered_records reads one sink's client; a second Kafka sink on the registry cannot share it: %w", err)
			}
			return nil, fmt.Errorf("kafka sink metrics: %w", err)
		}
	}
	return m, nil
}

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten: every batch
// a broker acknowledged counts, whichever Write it carried.
func (m *metrics) OnProduceBatchWritten(_ kgo.BrokerMetadata, topic string, _ int32, bm kgo.ProduceBatchMetrics) {
	m.produced.WithLabelValues(topic).Add(float64(bm.NumRecords))
	m.bytesProduced.Add(float64(bm.CompressedBytes))
	m.uncompressed.Add(float64(bm.UncompressedBytes))
	m.countBytes(int64(bm.CompressedBytes))
}
