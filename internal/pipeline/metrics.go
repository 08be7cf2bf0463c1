package pipeline

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
)

// metrics of the pipeline; built once per Registerer.
type metrics struct {
	delivered       *prometheus.CounterVec
	buffered        prometheus.Gauge
	capacity        prometheus.Gauge
	batchDuration   *prometheus.HistogramVec
	commits         prometheus.Counter
	commitErrors    prometheus.Counter
	commitDuration  prometheus.Histogram
	watermark       *prometheus.GaugeVec
	lag             *prometheus.GaugeVec
	pollersRunning  prometheus.Gauge
	lastAckUnixTime prometheus.Gauge
	streamFailed    *prometheus.GaugeVec
	permanentErrors *prometheus.CounterVec
	sinkSuppressed  *prometheus.CounterVec
	suppressed      *prometheus.CounterVec // source, account, cause (once)
	refetched       *prometheus.CounterVec // source, account (once)
	// recordDelay (source) and lateDelivery (source, account), with
	// tenant first when tenanted: fetched at
	// minus record time of the records the once filter kept (delays).
	recordDelay  *prometheus.HistogramVec
	lateDelivery *prometheus.HistogramVec

	// tenanted: the streams have tenants (`tenants:`), and every series
	// of a stream has the label tenant before source and account. A
	// collector of one tenant has no tenant label: its series are those
	// of before tenants existed.
	tenanted bool
}

// streamLabels returns the label names of a stream's series: before,
// then tenant (when tenanted), source and account, then after.
func streamLabels(tenanted bool, before []string, after ...string) []string {
	out := append([]string{}, before...)
	if tenanted {
		out = append(out, "tenant")
	}
	out = append(out, "source", "account")
	return append(out, after...)
}

// lv returns the label values of stream k's series, in the order of
// streamLabels with no before: tenant (when tenanted), source, account,
// then after.
func (m *metrics) lv(k record.Stream, after ...string) []string {
	out := make([]string, 0, 3+len(after))
	if m.tenanted {
		out = append(out, k.TenantName())
	}
	out = append(out, k.Source, k.Account)
	return append(out, after...)
}

// delayBuckets resolve a record's delay from seconds (a stream polled
// every quarter of a minute) to a day (the last recheck point).
var delayBuckets = []float64{1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300, 450, 600, 900, 1200, 1800, 2700,
	3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600, 48 * 3600}

// newMetrics registers the pipeline's metrics on reg; the streams of p's
// producers decide whether they carry a tenant label.
func newMetrics(reg prometheus.Registerer, p *Pipeline) *metrics {
	tenanted := false
	for _, pr := range p.producers {
		tenanted = tenanted || pr.Stream().Tenant != ""
	}
	sl := func(after ...string) []string { return streamLabels(tenanted, nil, after...) }
	m := &metrics{tenanted: tenanted,
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_rows_delivered_total",
			Help: "Records acknowledged by the sink, by source and account.",
		}, sl()),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "collector_pipeline_buffered_records",
			Help: "Records fetched and not yet acknowledged by every sink.",
		}),
		capacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "collector_pipeline_capacity_records",
			Help: "Bound of collector_pipeline_buffered_records (pipeline.buffer_records).",
		}),
		batchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "collector_sink_batch_duration_seconds",
			Help:    "Time from handing a batch on until the sink acknowledged it, retries and the wait in the sink's queue included, by sink.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"sink"}),
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
		}, sl()),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_watermark_lag_seconds",
			Help: "How far the committed watermark is behind now (freshness).",
		}, sl()),
		pollersRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "collector_pollers_running",
			Help: "Pollers (one per source and account) currently running.",
		}),
		lastAckUnixTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "collector_last_ack_timestamp_seconds",
			Help: "When every sink had acknowledged a batch last (Unix seconds).",
		}),
		streamFailed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_stream_failed",
			Help: "1 while the stream is stopped because a sink refused one of its batches for good (a permanent error), else 0; a restart after the fix resumes it.",
		}, sl()),
		permanentErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_sink_permanent_errors_total",
			Help: "Batches a sink refused for good (a permanent error): they are not retried, and their stream stops for every sink.",
		}, sl("sink")),
		suppressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_duplicates_suppressed_total",
			Help: "Records fetched again and not delivered because the stream delivered them before (its delivered set in the checkpoint), by cause: recheck (a period asked again for late records) or refetch (an expired chain, a split, a resume).",
		}, sl("cause")),
		refetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_refetched_rows_total",
			Help: "Records fetched in a period the stream had delivered from before (rechecks, expired chains, splits, resumes), delivered or not.",
		}, sl()),
		sinkSuppressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_sink_duplicates_suppressed_total",
			Help: "Records not written to a sink again because it had stored them before a crash, past what the checkpoint covered (its Recover at start said so), by sink.",
		}, streamLabels(tenanted, []string{"sink"})),
		recordDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "collector_record_delay_seconds",
			Help:    "For every record a fetch delivered (a window's first fetch or a recheck; not alert updates nor inventory snapshots), how long after its record time its page was fetched: the platform's delay, the lag and the wait for the poll or recheck that found it.",
			Buckets: delayBuckets,
		}, sl()[:len(sl())-1]),
		lateDelivery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "collector_late_delivery_seconds",
			Help:    "For each late record a recheck recovered: how long after its record time its page was fetched (the platform's delay plus the wait for the recheck that found it); the recovered part of collector_record_delay_seconds. Compare with collector_recheck_dense_seconds: records found past it came from a sparse point.",
			Buckets: delayBuckets,
		}, sl()),
	}
	reg.MustRegister(m.delivered, m.buffered, m.capacity, m.batchDuration, m.commits,
		m.commitErrors, m.commitDuration, m.watermark, m.lag, m.pollersRunning, m.lastAckUnixTime,
		m.streamFailed, m.permanentErrors, m.sinkSuppressed, m.suppressed, m.refetched,
		m.recordDelay, m.lateDelivery, &lagCollector{p: p})
	return m
}

// initStream creates the delivery and failure series of stream k at zero,
// so that alerts see them before its first record or failure.
func (m *metrics) initStream(k record.Stream, targets []*target) {
	m.delivered.WithLabelValues(m.lv(k)...)
	m.streamFailed.WithLabelValues(m.lv(k)...).Set(0)
	m.refetched.WithLabelValues(m.lv(k)...)
	m.recordDelay.WithLabelValues(m.lv(k)[:len(m.lv(k))-1]...)
	m.lateDelivery.WithLabelValues(m.lv(k)...)
	for _, c := range []string{SuppressedRecheck, SuppressedRefetch} {
		m.suppressed.WithLabelValues(m.lv(k, c)...)
	}
	for _, t := range targets {
		m.permanentErrors.WithLabelValues(m.lv(k, t.Name)...)
		m.sinkSuppressed.WithLabelValues(append([]string{t.Name}, m.lv(k)...)...)
	}
}

// Each sink's lag (SinkLags), read when scraped.
var (
	pendingDesc = prometheus.NewDesc("collector_sink_pending_records",
		"Records handed to the sink (waiting in its queue or being written) and not yet acknowledged by it. A page holds its room in the buffer until every sink acknowledged it: the sink with the most pending holds the others back.",
		[]string{"sink"}, nil)
	oldestDesc = prometheus.NewDesc("collector_sink_oldest_pending_seconds",
		"Age of the oldest page handed to the sink and not yet acknowledged by it; 0 when none waits.",
		[]string{"sink"}, nil)
)

// lagCollector exports SinkLags.
type lagCollector struct{ p *Pipeline }

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- oldestDesc
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.p.SinkLags() {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(l.Records), l.Sink)
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, l.Oldest.Seconds(), l.Sink)
	}
}

// onceSeries are the series of one stream its re-ask filter (once)
// counts in at every page.
type onceSeries struct {
	refetched, suppressedRecheck, suppressedRefetch prometheus.Counter
	// recordDelay is collector_record_delay_seconds (no account),
	// lateDelivery collector_late_delivery_seconds.
	recordDelay, lateDelivery prometheus.Observer
}

// onceSeries binds stream k's series of its re-ask filter.
func (m *metrics) onceSeries(k record.Stream) onceSeries {
	lv := m.lv(k)
	return onceSeries{
		refetched:         m.refetched.WithLabelValues(lv...),
		suppressedRecheck: m.suppressed.WithLabelValues(m.lv(k, SuppressedRecheck)...),
		suppressedRefetch: m.suppressed.WithLabelValues(m.lv(k, SuppressedRefetch)...),
		recordDelay:       m.recordDelay.WithLabelValues(lv[:len(lv)-1]...), // no account
		lateDelivery:      m.lateDelivery.WithLabelValues(lv...),
	}
}

// delays observes how long after its record time each record of kept was
// fetched (at fetched): in collector_record_delay_seconds, and, for late
// records a recheck recovered, in collector_late_delivery_seconds. A
// page without a fetch time teaches nothing.
func (s onceSeries) delays(kept []record.Envelope, fetched time.Time, late bool) {
	if fetched.IsZero() || len(kept) == 0 {
		return
	}
	for _, e := range kept {
		d := max(fetched.Sub(e.Time), 0).Seconds()
		s.recordDelay.Observe(d)
		if late {
			s.lateDelivery.Observe(d)
		}
	}
}
