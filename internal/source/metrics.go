package source

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/source/pollmetrics"
)

// Metrics are the pollers' Prometheus metrics (see pollmetrics.Metrics).
// A nil *Metrics is valid and records nothing.
type Metrics = pollmetrics.Metrics

// NewMetrics creates the metrics and registers them with reg; a nil reg
// gives unregistered metrics (tests, tools).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) { return pollmetrics.New(reg) }

// Reasons of collector_bad_records_total (see pollmetrics).
const (
	BadRecordInvalidUTF8    = pollmetrics.BadRecordInvalidUTF8
	BadRecordNotJSON        = pollmetrics.BadRecordNotJSON
	BadRecordTimeMissing    = pollmetrics.BadRecordTimeMissing
	BadRecordTimeUnreadable = pollmetrics.BadRecordTimeUnreadable
	BadRecordTimeOutOfRange = pollmetrics.BadRecordTimeOutOfRange
	BadRecordOther          = pollmetrics.BadRecordOther
)

// BadRecordReasons returns every reason label of
// collector_bad_records_total.
func BadRecordReasons() []string { return pollmetrics.BadRecordReasons() }
