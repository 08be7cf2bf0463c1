package kafka

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/sink/sinkmetrics"
)

// sinkName is the value of the "sink" label on shared metrics.
const sinkName = "kafka"

// Values of the "kind" label of collector_kafka_produce_errors_total and
// of collector_sink_errors_total{sink="kafka"}.
const (
	kindTooLarge     = "too_large"     // MESSAGE_TOO_LARGE from the producer or a broker
	kindTimeout      = "timeout"       // delivery timeout, request timeout
	kindCanceled     = "canceled"      // the Write's context ended
	kindAuth         = "auth"          // SASL, ACL or TLS refusal
	kindUnknownTopic = "unknown_topic" // topic missing at produce time
	kindBroker       = "broker"        // any other error code from a broker
	kindClosed       = "closed"        // the sink or client was shut down
	kindOther        = "other"         // network and everything else
	kindDeadLetter   = "dead_letter"   // the dead-letter file could not be written (Write errors only)
)

// Reasons of collector_dead_letters_total.
const reasonTooLarge = "too_large"

// metrics are the Kafka sink's series: the shared collector_sink_* ones
// and its own collector_kafka_*.
type metrics struct {
	shared *sinkmetrics.Metrics

	produced        *prometheus.CounterVec // topic
	bytesProduced   prometheus.Counter
	uncompressed    prometheus.Counter
	produceErrors   *prometheus.CounterVec // kind
	produceLatency  prometheus.Histogram
	deadLetters     *prometheus.CounterVec // reason (sink curried)
	bufferedRecords prometheus.GaugeFunc
	bufferedBytes   prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, client *atomic.Pointer[kgo.Client]) (*metrics, error) {
	shared, err := sinkmetrics.New(reg, sinkName)
	if err != nil {
		return nil, fmt.Errorf("kafka sink metrics: %w", err)
	}
	m := &metrics{shared: shared}
	if m.produced, err = sinkmetrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "collector_kafka_records_produced_total",
		Help: "Records the brokers acknowledged, by topic (topics are sources x accounts at most).",
	}, []string{"topic"})); err != nil {
		return nil, err
	}
	if m.bytesProduced, err = sinkmetrics.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "collector_kafka_bytes_produced_total",
		Help: "Bytes of acknowledged record batches as sent (after compression).",
	})); err != nil {
		return nil, err
	}
	if m.uncompressed, err = sinkmetrics.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "collector_kafka_uncompressed_bytes_produced_total",
		Help: "Bytes of acknowledged record batches before compression (with collector_kafka_bytes_produced_total: the compression ratio).",
	})); err != nil {
		return nil, err
	}
	if m.produceErrors, err = sinkmetrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "collector_kafka_produce_errors_total",
		Help: "Records the producer failed, by kind: too_large, timeout, canceled, auth, unknown_topic, broker, closed, other. Their batch is retried, or for a record too large on its own dead-lettered; records dead-lettered before producing are not counted here.",
	}, []string{"kind"})); err != nil {
		return nil, err
	}
	if m.produceLatency, err = sinkmetrics.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "collector_kafka_produce_latency_seconds",
		Help:    "Time from the first record of a batch handed to the producer until the last one was acknowledged, for batches acknowledged in full.",
		Buckets: sinkmetrics.WriteDurationBuckets,
	})); err != nil {
		return nil, err
	}
	dl, err := sinkmetrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "collector_dead_letters_total",
		Help: "Records written to a dead-letter file instead of their destination, by sink and reason.",
	}, []string{"sink", "reason"}))
	if err != nil {
		return nil, err
	}
	if m.deadLetters, err = dl.CurryWith(prometheus.Labels{"sink": sinkName}); err != nil {
		return nil, fmt.Errorf("kafka sink metrics: collector_dead_letters_total: %w", err)
	}
	m.bufferedRecords = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "collector_kafka_buffered_records",
		Help: "Records held by the producer, not yet acknowledged by a broker.",
	}, func() float64 {
		if cl := client.Load(); cl != nil {
			return float64(cl.BufferedProduceRecords())
		}
		return 0
	})
	m.bufferedBytes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "collector_kafka_buffered_bytes",
		Help: "Bytes (keys, values, headers) held by the producer, not yet acknowledged by a broker.",
	}, func() float64 {
		if cl := client.Load(); cl != nil {
			return float64(cl.BufferedProduceBytes())
		}
		return 0
	})
	if reg != nil {
		// Gauges read this sink's client: a second Kafka sink on the same
		// registry cannot share them, so a clash is an error.
		if err := reg.Register(m.bufferedRecords); err != nil {
			return nil, fmt.Errorf("kafka sink metrics: register collector_kafka_buffered_records: %w", err)
		}
		if err := reg.Register(m.bufferedBytes); err != nil {
			reg.Unregister(m.bufferedRecords)
			return nil, fmt.Errorf("kafka sink metrics: register collector_kafka_buffered_bytes: %w", err)
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
	m.shared.Bytes.Add(float64(bm.CompressedBytes))
}
