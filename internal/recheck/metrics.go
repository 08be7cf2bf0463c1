package recheck

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Metrics are the collector_recheck_* series, per stream (labels source
// and account, of bounded cardinality). Build one per process with
// NewMetrics and share it between the pollers. A nil *Metrics is valid
// and records nothing. Safe for concurrent use.
type Metrics struct {
	windows   *prometheus.CounterVec // log windows rechecked
	grown     *prometheus.CounterVec // refetched ranges that grew
	recovered *prometheus.CounterVec // rows the counts grew by, fetched again
	refetched *prometheus.CounterVec // rows of the ranges fetched again
	lastPoint *prometheus.CounterVec // of which at a last recheck point
	shrunk    *prometheus.CounterVec // rows the counts fell by
	requests  *prometheus.CounterVec // requests made by rechecks
	expired   *prometheus.CounterVec // windows that left the log with a recheck to go
	pending   *prometheus.GaugeVec   // windows with a recheck due
	dense     *prometheus.GaugeVec   // learnt dense phase (auto)
	cadence   *prometheus.GaugeVec   // learnt sweep cadence (auto)
	lateShare *prometheus.GaugeVec   // share of records later than after
}

// LateAfters are the values of the after label of
// collector_late_records_share.
var LateAfters = []time.Duration{2 * time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// NewMetrics registers the recheck metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"source", "account"}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		windows: counter("collector_recheck_windows_total",
			"Fetched windows asked again for late records (CONTRACT C3), by stream."),
		grown: counter("collector_recheck_windows_grown_total",
			"Rechecked ranges whose count grew and that were fetched again: the platform made records visible after the window was fetched."),
		recovered: counter("collector_recheck_rows_recovered_total",
			"Rows by which rechecked counts grew and that were fetched again: records that a single fetch would have lost."),
		refetched: counter("collector_recheck_rows_refetched_total",
			"Rows of the ranges rechecks fetched again to recover collector_recheck_rows_recovered_total (as counted): a grown window is narrowed by counts, below its bounds with the delivered set, so that it stays close to what was recovered."),
		lastPoint: counter("collector_recheck_rows_recovered_last_point_total",
			"Rows recovered by rechecks that included a window's last recheck point: records later than every earlier point; later ones would stay lost."),
		shrunk: counter("collector_recheck_rows_shrunk_total",
			"Rows by which rechecked counts fell (retention, deletion); logged, never fixed."),
		requests: counter("collector_recheck_requests_total",
			"API requests made by rechecks: counts and edge re-asks (re-fetched pages are counted with the stream's pages)."),
		expired: counter("collector_recheck_windows_expired_total",
			"Windows that passed the recheck horizon with a recheck still to go: the budget share could not afford it."),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "collector_recheck_pending",
			Help: "Windows with a recheck due now, by stream."}, labels),
		dense: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "collector_recheck_dense_seconds",
			Help: "recheck: auto: windows that ended less than this ago are counted again at every sweep (the 99th percentile of the platform's delays learnt, plus a cadence); 0 with fixed points."}, labels),
		cadence: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "collector_recheck_cadence_seconds",
			Help: "recheck: auto: how often the recent windows are swept, as the recheck share of the budget affords; 0 with fixed points."}, labels),
		lateShare: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "collector_late_records_share",
			Help: "Share of the stream's records (decayed, half-life 30 min) that rechecks found more than after past their record time: what one fetch per window at that age would miss."}, []string{"source", "account", "after"}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.windows, m.grown, m.recovered, m.refetched, m.lastPoint, m.shrunk, m.requests, m.expired, m.pending, m.dense, m.cadence, m.lateShare} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// Observe records the result of one unit's recheck on stream k.
func (m *Metrics) Observe(k record.Stream, r Result) {
	if m == nil {
		return
	}
	m.windows.WithLabelValues(k.Source, k.Account).Add(float64(r.Windows()))
	m.grown.WithLabelValues(k.Source, k.Account).Add(float64(r.Grown()))
	m.recovered.WithLabelValues(k.Source, k.Account).Add(float64(r.Recovered))
	m.refetched.WithLabelValues(k.Source, k.Account).Add(float64(r.Refetched))
	if r.Final {
		m.lastPoint.WithLabelValues(k.Source, k.Account).Add(float64(r.Recovered))
	} else {
		m.lastPoint.WithLabelValues(k.Source, k.Account).Add(0)
	}
	m.requests.WithLabelValues(k.Source, k.Account).Add(float64(r.Requests))
	var fell int64
	for _, s := range r.Shrunk {
		fell += s.Before - s.After
	}
	m.shrunk.WithLabelValues(k.Source, k.Account).Add(float64(fell))
}

// Expired counts n windows of k that expired with a recheck to go (0
// makes the series exist).
func (m *Metrics) Expired(k record.Stream, n int) {
	if m == nil || n < 0 {
		return
	}
	m.expired.WithLabelValues(k.Source, k.Account).Add(float64(n))
}

// SetPending sets the number of windows of k with a recheck due
// (Plan.Pending).
func (m *Metrics) SetPending(k record.Stream, n int) {
	if m == nil {
		return
	}
	m.pending.WithLabelValues(k.Source, k.Account).Set(float64(n))
}

// Learnt publishes the plan stream k uses (Config.Learnt) and the share
// of its records found late past each of LateAfters.
func (m *Metrics) Learnt(k record.Stream, p Plan, d cursor.Delays) {
	if m == nil {
		return
	}
	m.dense.WithLabelValues(k.Source, k.Account).Set(p.Dense.Seconds())
	m.cadence.WithLabelValues(k.Source, k.Account).Set(p.Cadence.Seconds())
	for _, a := range LateAfters {
		m.lateShare.WithLabelValues(k.Source, k.Account, AfterLabel(a)).Set(LateShare(d, a))
	}
}

// AfterLabel is the after label of a LateAfters value: "2m", "1h".
func AfterLabel(d time.Duration) string {
	if d%time.Hour == 0 {
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/time.Minute)) + "m"
}
