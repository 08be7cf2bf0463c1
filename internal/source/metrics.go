package source

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/window"
)

// Metrics are the pollers' Prometheus metrics: rows and pages fetched,
// splits, restarts, flawed records, poll errors, the paging limits learnt
// (page size, next-page life, page time, split threshold) and blocked
// streams, per stream. The API client's own (requests, retries, the budget) are
// api.Metrics. Build one per process with New and share it between
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
	ttlSeen      *prometheus.GaugeVec   // source, account
	pageSeconds  *prometheus.GaugeVec   // source, account
	splitAt      *prometheus.GaugeVec   // source, account
	chainCap     *prometheus.GaugeVec   // source, account
	blockedG     *prometheus.GaugeVec   // source, account, reason
	cadence      *prometheus.GaugeVec   // source, account
	cadenceBound *prometheus.GaugeVec   // source, account, bound
	inventory    inventoryMetrics       // inventory.go
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

// Kinds of collector_poll_errors_total (the label kind): what made a poll
// fail. The pollers count each failed poll under one of them.
const (
	// PollErrorTransient: a network error, a timeout, a 5xx or a 429 past
	// its retries; a plain retry may cure it.
	PollErrorTransient = "transient"
	// PollErrorAuth: 401 from the token endpoint (the key or its secret
	// refused) or on the edge token (C1, C6); a revoked token is renewed.
	PollErrorAuth = "auth"
	// PollErrorForbidden: 403, the key may not read the account or source.
	PollErrorForbidden = "forbidden"
	// PollErrorBadRequest: 400, a filter or returns the API refuses.
	PollErrorBadRequest = "bad_request"
	// PollErrorPermanent: another error a retry cannot cure (C5).
	PollErrorPermanent = "permanent"
	// PollErrorOrigin: a next-page URL or redirect to another origin.
	PollErrorOrigin = "origin"
	// PollErrorBodyTooLarge: an answer larger than the client reads.
	PollErrorBodyTooLarge = "body_too_large"
	// PollErrorNextPageExpired: a next-page URL expired (C3) more often
	// than a window may be asked again.
	PollErrorNextPageExpired = "nextpage_expired"
	// PollErrorUnreachable: the API could not be reached at all.
	PollErrorUnreachable = "unreachable"
	// PollErrorTruncated: a window that cannot be split further ended at
	// the result cap (C3, C6): records may be missing from it.
	PollErrorTruncated = "truncated"
	// PollErrorPageCap: a window that cannot be split further reached
	// api.max_pages with a next page left.
	PollErrorPageCap = "page_cap"
)

// PollErrorKinds returns every kind label of collector_poll_errors_total,
// the series InitStream creates at zero.
func PollErrorKinds() []string {
	return []string{PollErrorTransient, PollErrorAuth, PollErrorForbidden, PollErrorBadRequest, PollErrorPermanent,
		PollErrorOrigin, PollErrorBodyTooLarge, PollErrorNextPageExpired, PollErrorUnreachable, PollErrorTruncated,
		PollErrorPageCap}
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
		ttlSeen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_next_page_ttl_seen_seconds",
			Help: "Youngest chain age at which the API refused a next-page URL as expired (C3): the next-page life the stream plans its walks for when shorter than api.next_page_ttl. 0 until one expired.",
		}, []string{"source", "account"}),
		pageSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_page_seconds",
			Help: "Average time from one page of a chain walk to the next (waits included), which sizes windows whose walk must end within the next-page life.",
		}, []string{"source", "account"}),
		splitAt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_split_threshold_rows",
			Help: "Rows from which a result set may be truncated, as learnt: min(api.result_cap, full page size seen x api.max_pages, chain cap seen); edge.max_rows for edge sources. A first page whose totalRows reaches it is split.",
		}, []string{"source", "account"}),
		chainCap: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_chain_cap_seen_rows",
			Help: "Most rows the API served in one next-page chain that ended before its first page's totalRows (C3: a cap of the server's own, below api.result_cap); result sets are split below it. 0 until a chain was cut so.",
		}, []string{"source", "account"}),
		blockedG: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_stream_blocked",
			Help: "1 while the stream's requests are refused with an error a retry cannot cure (reason: forbidden, unauthorized, bad_request, not_found, method_not_allowed, conflict, client_error, origin, body_too_large, permanent); it is asked again every api.permanent_error_retry.",
		}, []string{"source", "account", "reason"}),
		cadence: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_poll_cadence_seconds",
			Help: "How often the stream asks for its newest records once caught up: its share of the rate budget after the reserve and the recheck share (interval: auto), at least the floor, or the configured interval; collector_poll_cadence_bound says which.",
		}, []string{"source", "account"}),
		cadenceBound: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_poll_cadence_bound",
			Help: "1 for what bounds the stream's poll cadence (bound: budget, the stream's share of its rate budget; floor, the least cadence; configured, sources.*.interval), 0 for the others.",
		}, []string{"source", "account", "bound"}),
	}
	m.inventory = newInventoryMetrics()
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.rows, m.pages, m.splits, m.restarts, m.badRecords, m.pollErrors, m.pageRowsSeen,
		m.ttlSeen, m.pageSeconds, m.splitAt, m.chainCap, m.blockedG, m.cadence, m.cadenceBound,
		m.inventory.requests, m.inventory.delivered, m.inventory.agents} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// Fetched counts a page of rows records.
func (m *Metrics) Fetched(source, account string, rows int) {
	if m != nil {
		m.pages.WithLabelValues(source, account).Inc()
		m.rows.WithLabelValues(source, account).Add(float64(rows))
	}
}

// Cadence sets the stream's poll cadence and what bounds it.
func (m *Metrics) Cadence(source, account string, c Cadence) {
	if m == nil {
		return
	}
	m.cadence.WithLabelValues(source, account).Set(c.Every.Seconds())
	for _, b := range CadenceBounds() {
		v := 0.0
		if b == c.Bound {
			v = 1
		}
		m.cadenceBound.WithLabelValues(source, account, b).Set(v)
	}
}

// Split counts a window split.
func (m *Metrics) Split(source, account string) {
	if m != nil {
		m.splits.WithLabelValues(source, account).Inc()
	}
}

// Restart counts a window asked again after a next-page expiry (C3).
func (m *Metrics) Restart(source, account string) {
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
	m.badRecords.WithLabelValues(source, account, BadRecordReason(reason)).Inc()
}

// BadRecordReason is reason when it is one of BadRecordReasons, else
// BadRecordOther: the label stays of bounded cardinality.
func BadRecordReason(reason string) string {
	switch reason {
	case BadRecordInvalidUTF8, BadRecordNotJSON, BadRecordTimeMissing, BadRecordTimeUnreadable, BadRecordTimeOutOfRange:
		return reason
	}
	return BadRecordOther
}

// PageRows sets the most records seen in one page.
func (m *Metrics) PageRows(source, account string, rows int) {
	if m != nil {
		m.pageRowsSeen.WithLabelValues(source, account).Set(float64(rows))
	}
}

// Limits sets the paging limits learnt and the split threshold in use.
func (m *Metrics) Limits(source, account string, l window.Limits, splitAt int64) {
	if m != nil {
		m.ttlSeen.WithLabelValues(source, account).Set(l.NextPageTTL.Seconds())
		m.pageSeconds.WithLabelValues(source, account).Set(l.PageTime.Seconds())
		m.splitAt.WithLabelValues(source, account).Set(float64(splitAt))
		m.chainCap.WithLabelValues(source, account).Set(float64(l.ChainCap))
	}
}

// Blocked sets collector_stream_blocked of a reason to 1 (on) or 0.
func (m *Metrics) Blocked(source, account, reason string, on bool) {
	if m != nil {
		v := 0.0
		if on {
			v = 1
		}
		m.blockedG.WithLabelValues(source, account, reason).Set(v)
	}
}

// PollError counts a failed poll of kind.
func (m *Metrics) PollError(source, account, kind string) {
	if m != nil {
		m.pollErrors.WithLabelValues(source, account, kind).Inc()
	}
}

// InitStream creates the series of one stream at zero, so that dashboards
// and alerts (increase() over a counter) see them before their first
// event: a stream that fails before it fetched anything shows its rows at
// 0 and its poll errors rising, and is not blocked (0) until it is. The
// client creates its functionality's (api.Client.InitFunctionality).
func (m *Metrics) InitStream(spec catalog.Spec, account string) {
	if m == nil {
		return
	}
	for _, v := range []*prometheus.CounterVec{m.rows, m.pages, m.splits, m.restarts} {
		v.WithLabelValues(spec.Name, account)
	}
	for _, r := range BadRecordReasons() {
		m.badRecords.WithLabelValues(spec.Name, account, r)
	}
	for _, k := range PollErrorKinds() {
		m.pollErrors.WithLabelValues(spec.Name, account, k)
	}
	for _, r := range api.PermanentReasons() {
		m.blockedG.WithLabelValues(spec.Name, account, r)
	}
	m.pageRowsSeen.WithLabelValues(spec.Name, account)
	m.ttlSeen.WithLabelValues(spec.Name, account)
	m.pageSeconds.WithLabelValues(spec.Name, account)
	m.chainCap.WithLabelValues(spec.Name, account)
	if spec.Inventory {
		m.inventory.init(spec.Name, account)
	}
}

// Splits is collector_windows_split_total of a stream, for tests.
func (m *Metrics) Splits(source, account string) prometheus.Counter {
	return m.splits.WithLabelValues(source, account)
}

// Restarts is collector_nextpage_restarts_total of a stream, for tests.
func (m *Metrics) Restarts(source, account string) prometheus.Counter {
	return m.restarts.WithLabelValues(source, account)
}

// PollErrors is collector_poll_errors_total of a stream and kind, for
// tests.
func (m *Metrics) PollErrors(source, account, kind string) prometheus.Counter {
	return m.pollErrors.WithLabelValues(source, account, kind)
}

// BadRecords is collector_bad_records_total of a stream and reason, for
// tests.
func (m *Metrics) BadRecords(source, account, reason string) prometheus.Counter {
	return m.badRecords.WithLabelValues(source, account, reason)
}
