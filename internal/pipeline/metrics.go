package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
)

// metrics of the pipeline; built once per Registerer.
type metrics struct {
	delivered       *prometheus.CounterVec
	buffered        prometheus.Gauge
	capacity        prometheus.Gauge
	batchDuration   prometheus.Histogram
	commits         prometheus.Counter
	commitErrors    prometheus.Counter
	commitDuration  prometheus.Histogram
	watermark       *prometheus.GaugeVec
	lag             *prometheus.GaugeVec
	pollersRunning  prometheus.Gauge
	lastAckUnixTime prometheus.Gauge
	streamFailed    *prometheus.GaugeVec
	permanentErrors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_rows_delivered_total",
			Help: "Records acknowledged by the sink, by source and account.",
		}, []string{"source", "account"}),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "collector_pipeline_buffered_records",
			Help: "Records fetched and not yet acknowledged by the sink.",
		}),
		capacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "collector_pipeline_capacity_records",
			Help: "Bound of collector_pipeline_buffered_records (pipeline.buffer_records).",
		}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "collector_sink_batch_duration_seconds",
			Help:    "Time from handing a batch to the sink until it was acknowledged, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_checkpoint_commits_total",
			Help: "Checkpoint transactions committed.",
		}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_checkpoint_commit_errors_total",
			Help: "Checkpoint commits that failed; they are retried.",
		}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "collector_checkpoint_commit_duration_seconds",
			Help:    "Duration of checkpoint commits (fsync included).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12),
		}),
		watermark: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_watermark_timestamp_seconds",
			Help: "Committed watermark (Unix seconds): every record before it is delivered.",
		}, []string{"source", "account"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_watermark_lag_seconds",
			Help: "How far the committed watermark is behind now (freshness).",
		}, []string{"source", "account"}),
		pollersRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "collector_pollers_running",
			Help: "Pollers (one per source and account) currently running.",
		}),
		lastAckUnixTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "collector_last_ack_timestamp_seconds",
			Help: "When the sink last acknowledged a batch (Unix seconds).",
		}),
		streamFailed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_stream_failed",
			Help: "1 while the stream is stopped because the sink refused one of its batches for good (a permanent error), else 0; a restart after the fix resumes it.",
		}, []string{"source", "account"}),
		permanentErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_sink_permanent_errors_total",
			Help: "Batches the sink refused for good (a permanent error): they are not retried, and their stream stops.",
		}, []string{"source", "account"}),
	}
	reg.MustRegister(m.delivered, m.buffered, m.capacity, m.batchDuration, m.commits,
		m.commitErrors, m.commitDuration, m.watermark, m.lag, m.pollersRunning, m.lastAckUnixTime,
		m.streamFailed, m.permanentErrors)
	return m
}

// initStream creates the failure series of stream k at zero, so that
// alerts see them before a failure.
func (m *metrics) initStream(k record.Stream) {
	m.streamFailed.WithLabelValues(k.Source, k.Account).Set(0)
	m.permanentErrors.WithLabelValues(k.Source, k.Account)
}
