package source

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/source/catalog"
)

// Metrics are the pollers' Prometheus metrics: rows and pages fetched,
// splits, restarts, flawed records, poll errors and page sizes, per
// stream. The API client's own (requests, retries, the budget) are
// api.Metrics. Build one per process with NewMetrics and share it between
// the pollers. Labels are of bounded cardinality: source names, configured
// accounts, fixed reasons. A nil *Metrics is valid and records nothing.
type Metrics struct {
	rows         *prometheus.CounterVec // source, account
	pages        *prometheus.CounterVec // source, account
	splits       *prometheus.CounterVec // source, account
	restarts     *prometheus.CounterVec // source, account
	badRecords   *prometheus.CounterVec // source, account, reason
	pollErrors   *prometheus.CounterVec // source, account, kind
	pageRowsSeen *prometheus.GaugeVec   // source, account
}

// Reasons of collector_bad_records_total: why a record was delivered with
// a flaw (its time set to the window start, or its bytes kept as sent).
const (
	// BadRecordInvalidUTF8: the record holds bytes that are not UTF-8.
	BadRecordInvalidUTF8 = "invalid_utf8"
	// BadRecordNotJSON: the record is not valid JSON.
	BadRecordNotJSON = "not_json"
	// BadRecordTimeMissing: the record has no record time member (C3, C6).
	BadRecordTimeMissing = "time_missing"
	// BadRecordTimeUnreadable: the record time is neither an ISO 8601 time
	// nor an epoch number.
	BadRecordTimeUnreadable = "time_unreadable"
	// BadRecordTimeOutOfRange: the record time is a number or a time that
	// no real record has (NaN, 1e300, year 0 or 9999).
	BadRecordTimeOutOfRange = "time_out_of_range"
	// BadRecordOther counts a reason this package does not know, so that
	// the label stays of bounded cardinality.
	BadRecordOther = "other"
)

// BadRecordReasons returns every reason label of
// collector_bad_records_total.
func BadRecordReasons() []string {
	return []string{BadRecordInvalidUTF8, BadRecordNotJSON, BadRecordTimeMissing, BadRecordTimeUnreadable,
		BadRecordTimeOutOfRange, BadRecordOther}
}

// NewMetrics creates the metrics and registers them with reg; a nil reg
// gives unregistered metrics (tests, tools).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_rows_fetched_total",
			Help: "Records fetched, by source and account.",
		}, []string{"source", "account"}),
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_pages_fetched_total",
			Help: "Pages fetched, by source and account.",
		}, []string{"source", "account"}),
		splits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_windows_split_total",
			Help: "Windows split because they held too many rows (C3 result cap, C6 max_rows).",
		}, []string{"source", "account"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_nextpage_restarts_total",
			Help: "Windows asked again from their first page after a next-page URL expired (C3).",
		}, []string{"source", "account"}),
		badRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_bad_records_total",
			Help: "Records delivered with a flaw, by reason (invalid_utf8, not_json, time_missing, time_unreadable, time_out_of_range): a time flaw sets the record time to the window start.",
		}, []string{"source", "account", "reason"}),
		pollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_poll_errors_total",
			Help: "Poll failures by kind (permanent, auth, origin, body_too_large, truncated, page_cap, ...); the poller retries later.",
		}, []string{"source", "account", "kind"}),
		pageRowsSeen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_page_rows_seen",
			Help: "Most records the API sent in one page of the stream; what the poller reserves in the pipeline before each fetch (at least api.page_rows, at most the pipeline's batch bound).",
		}, []string{"source", "account"}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.rows, m.pages, m.splits, m.restarts, m.badRecords, m.pollErrors, m.pageRowsSeen} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) fetched(source, account string, rows int) {
	if m != nil {
		m.pages.WithLabelValues(source, account).Inc()
		m.rows.WithLabelValues(source, account).Add(float64(rows))
	}
}

func (m *Metrics) split(source, account string) {
	if m != nil {
		m.splits.WithLabelValues(source, account).Inc()
	}
}

func (m *Metrics) restart(source, account string) {
	if m != nil {
		m.restarts.WithLabelValues(source, account).Inc()
	}
}

// BadRecord counts one record of source and account delivered with a flaw
// (collector_bad_records_total). reason is one of BadRecordReasons; any
// other is counted as BadRecordOther. A nil *Metrics counts nothing.
func (m *Metrics) BadRecord(source, account, reason string) {
	if m == nil {
		return
	}
	m.badRecords.WithLabelValues(source, account, badRecordReason(reason)).Inc()
}

func badRecordReason(reason string) string {
	switch reason {
	case BadRecordInvalidUTF8, BadRecordNotJSON, BadRecordTimeMissing, BadRecordTimeUnreadable, BadRecordTimeOutOfRange:
		return reason
	}
	return BadRecordOther
}

func (m *Metrics) pageRows(source, account string, rows int) {
	if m != nil {
		m.pageRowsSeen.WithLabelValues(source, account).Set(float64(rows))
	}
}

func (m *Metrics) pollError(source, account, kind string) {
	if m != nil {
		m.pollErrors.WithLabelValues(source, account, kind).Inc()
	}
}

// initStream creates the series of one stream at zero, so that dashboards
// and alerts (increase() over a counter) see them before their first
// event. The client creates its functionality's (api.Client.InitFunctionality).
func (m *Metrics) initStream(spec catalog.Spec, account string) {
	if m == nil {
		return
	}
	for _, v := range []*prometheus.CounterVec{m.rows, m.pages, m.splits, m.restarts} {
		v.WithLabelValues(spec.Name, account)
	}
	for _, r := range BadRecordReasons() {
		m.badRecords.WithLabelValues(spec.Name, account, r)
	}
	m.pageRowsSeen.WithLabelValues(spec.Name, account)
}
