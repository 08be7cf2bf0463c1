package source

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the package's Prometheus metrics. Build one per process with
// NewMetrics and share it between the clients, the budget and the pollers.
// Labels are of bounded cardinality: source names, functionalities, status
// codes, configured accounts, fixed reasons. A nil *Metrics is valid and
// records nothing.
type Metrics struct {
	requests      *prometheus.CounterVec   // source, status
	duration      *prometheus.HistogramVec // source
	rateLimited   *prometheus.CounterVec   // functionality
	tokensLeft    *prometheus.GaugeVec     // functionality
	rateWait      *prometheus.CounterVec   // functionality
	rows          *prometheus.CounterVec   // source, account
	pages         *prometheus.CounterVec   // source, account
	splits        *prometheus.CounterVec   // source, account
	restarts      *prometheus.CounterVec   // source, account
	retries       *prometheus.CounterVec   // source, reason
	tokenRenewals *prometheus.CounterVec   // api
	badRecords    *prometheus.CounterVec   // source, account, reason
	pollErrors    *prometheus.CounterVec   // source, account, kind
	budgetTokens  *prometheus.GaugeVec     // functionality (local estimate)
	pageRowsSeen  *prometheus.GaugeVec     // source, account
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
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_requests_total",
			Help: "API requests by functionality (source, token, edge) and HTTP status (or \"error\" without an answer).",
		}, []string{"source", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "collector_request_duration_seconds",
			Help:    "Duration of API requests, body included, by functionality.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 125},
		}, []string{"source"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_rate_limited_total",
			Help: "429 answers seen, by functionality (a healthy collector sees none).",
		}, []string{"functionality"}),
		tokensLeft: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_rate_tokens_remaining",
			Help: "RateLimit-Remaining of the last answer, by functionality.",
		}, []string{"functionality"}),
		rateWait: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_rate_wait_seconds_total",
			Help: "Time spent waiting for rate budget, by functionality.",
		}, []string{"functionality"}),
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
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_retries_total",
			Help: "Requests repeated, by functionality and reason (429, 5xx, network, body, malformed, status, timeout, 401).",
		}, []string{"source", "reason"}),
		tokenRenewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_token_renewals_total",
			Help: "Bearer tokens obtained, by API.",
		}, []string{"api"}),
		badRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_bad_records_total",
			Help: "Records delivered with a flaw, by reason (invalid_utf8, not_json, time_missing, time_unreadable, time_out_of_range): a time flaw sets the record time to the window start.",
		}, []string{"source", "account", "reason"}),
		pollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_poll_errors_total",
			Help: "Poll failures by kind (permanent, auth, origin, body_too_large, truncated, page_cap, ...); the poller retries later.",
		}, []string{"source", "account", "kind"}),
		budgetTokens: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_rate_budget_tokens",
			Help: "Local estimate of the tokens this collector may still spend, by functionality.",
		}, []string{"functionality"}),
		pageRowsSeen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_page_rows_seen",
			Help: "Most records the API sent in one page of the stream; what the poller reserves in the pipeline before each fetch (at least api.page_rows, at most the pipeline's batch bound).",
		}, []string{"source", "account"}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.rateLimited, m.tokensLeft, m.rateWait,
		m.rows, m.pages, m.splits, m.restarts, m.retries, m.tokenRenewals, m.badRecords, m.pollErrors, m.budgetTokens, m.pageRowsSeen} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) request(fn, status string, seconds float64) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(fn, status).Inc()
	m.duration.WithLabelValues(fn).Observe(seconds)
}

func (m *Metrics) rateLimitedInc(fn string) {
	if m != nil {
		m.rateLimited.WithLabelValues(fn).Inc()
	}
}

func (m *Metrics) remaining(fn string, n int) {
	if m != nil {
		m.tokensLeft.WithLabelValues(fn).Set(float64(n))
	}
}

func (m *Metrics) budget(fn string, tokens float64) {
	if m != nil {
		m.budgetTokens.WithLabelValues(fn).Set(tokens)
	}
}

func (m *Metrics) waited(fn string, seconds float64) {
	if m != nil && seconds > 0 {
		m.rateWait.WithLabelValues(fn).Add(seconds)
	}
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

func (m *Metrics) retry(fn, reason string) {
	if m != nil {
		m.retries.WithLabelValues(fn, reason).Inc()
	}
}

func (m *Metrics) renewal(api string) {
	if m != nil {
		m.tokenRenewals.WithLabelValues(api).Inc()
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

// initStream creates the series of one stream and its functionality at
// zero, so that dashboards and alerts (increase() over a counter) see them
// before their first event.
func (m *Metrics) initStream(spec Spec, account string) {
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
	m.rateLimited.WithLabelValues(spec.Functionality)
	m.rateWait.WithLabelValues(spec.Functionality)
}
