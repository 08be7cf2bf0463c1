package api

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api/budget"
)

// Metrics are the API client's Prometheus metrics: requests, their
// duration, 429s, retries, token renewals and the rate budget. Build one
// per process with NewMetrics and share it between the clients and the
// budget. Labels are of bounded cardinality: functionalities, status
// codes, fixed reasons. A nil *Metrics is valid and records nothing.
type Metrics struct {
	requests      *prometheus.CounterVec   // source, status
	duration      *prometheus.HistogramVec // source
	rateLimited   *prometheus.CounterVec   // functionality
	tokensLeft    *prometheus.GaugeVec     // functionality
	rateWait      *prometheus.CounterVec   // functionality
	retries       *prometheus.CounterVec   // source, reason
	tokenRenewals *prometheus.CounterVec   // api
	budgetTokens  *prometheus.GaugeVec     // functionality (local estimate)
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
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_retries_total",
			Help: "Requests repeated, by functionality and reason (429, 5xx, network, body, malformed, status, timeout, 401).",
		}, []string{"source", "reason"}),
		tokenRenewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_token_renewals_total",
			Help: "Bearer tokens obtained, by API.",
		}, []string{"api"}),
		budgetTokens: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_rate_budget_tokens",
			Help: "Local estimate of the tokens this collector may still spend, by functionality.",
		}, []string{"functionality"}),
	}
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.rateLimited, m.tokensLeft, m.rateWait,
		m.retries, m.tokenRenewals, m.budgetTokens} {
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

var _ budget.Observer = (*Metrics)(nil)

// ObserveRemaining sets collector_rate_tokens_remaining of fn to the
// RateLimit-Remaining of its last answer (budget.Observer).
func (m *Metrics) ObserveRemaining(fn string, n int) {
	if m != nil {
		m.tokensLeft.WithLabelValues(fn).Set(float64(n))
	}
}

// ObserveTokens sets collector_rate_budget_tokens of fn to the budget's
// local estimate (budget.Observer).
func (m *Metrics) ObserveTokens(fn string, tokens float64) {
	if m != nil {
		m.budgetTokens.WithLabelValues(fn).Set(tokens)
	}
}

// ObserveWait adds to collector_rate_wait_seconds_total of fn
// (budget.Observer).
func (m *Metrics) ObserveWait(fn string, seconds float64) {
	if m != nil && seconds > 0 {
		m.rateWait.WithLabelValues(fn).Add(seconds)
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

// initFunctionality creates the series of one functionality at zero, so
// that dashboards and alerts (increase() over a counter) see them before
// their first event.
func (m *Metrics) initFunctionality(fn string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(fn)
	m.rateWait.WithLabelValues(fn)
	for _, reason := range retryReasons {
		m.retries.WithLabelValues(fn, reason)
	}
}

// retryReasons are the reasons of collector_retries_total: every
// transientError's, and a 401 answered by a new token.
var retryReasons = []string{"429", "5xx", "network", "body", "malformed", "status", "timeout", "401"}
