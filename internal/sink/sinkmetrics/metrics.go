package sinkmetrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the shared metric families.
const (
	RecordsTotal         = "collector_sink_records_total"
	BytesTotal           = "collector_sink_bytes_total"
	WriteDurationSeconds = "collector_sink_write_duration_seconds"
	ErrorsTotal          = "collector_sink_errors_total"
)

// WriteDurationBuckets are the histogram buckets of
// collector_sink_write_duration_seconds: from a 1 ms fsync to a 30 s insert.
var WriteDurationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// Metrics are the shared collector_sink_* series of one sink, its "sink"
// label already applied. Build it with New; the zero value is not usable.
// All methods are safe for concurrent use.
type Metrics struct {
	// Records counts envelopes acknowledged (Write returned nil).
	Records prometheus.Counter
	// Bytes counts the bytes of acknowledged batches as the sink wrote them
	// to its destination (after encoding and compression).
	Bytes prometheus.Counter
	// WriteDuration observes the duration of every Write call, failed ones
	// included.
	WriteDuration prometheus.Observer

	errors *prometheus.CounterVec // curried with sink; label kind
}

// New registers the shared families with reg, or reuses them when another
// sink registered them on reg before, and returns the series of the sink
// named sink. A nil reg gives working metrics that nobody exports (tests,
// tools). New fails only when reg holds an incompatible metric of the same
// name.
func New(reg prometheus.Registerer, sink string) (*Metrics, error) {
	if sink == "" {
		return nil, errors.New("sinkmetrics: empty sink name")
	}
	records, err := Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RecordsTotal,
		Help: "Envelopes a sink acknowledged as durable downstream.",
	}, []string{"sink"}))
	if err != nil {
		return nil, err
	}
	bytes, err := Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: BytesTotal,
		Help: "Bytes of acknowledged batches as written downstream (after encoding and compression).",
	}, []string{"sink"}))
	if err != nil {
		return nil, err
	}
	dur, err := Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    WriteDurationSeconds,
		Help:    "Duration of sink Write calls, failed ones included.",
		Buckets: WriteDurationBuckets,
	}, []string{"sink"}))
	if err != nil {
		return nil, err
	}
	errs, err := Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: ErrorsTotal,
		Help: "Failed sink Write calls by sink and kind of failure.",
	}, []string{"sink", "kind"}))
	if err != nil {
		return nil, err
	}
	l := prometheus.Labels{"sink": sink}
	curried, err := errs.CurryWith(l)
	if err != nil {
		return nil, fmt.Errorf("sinkmetrics: %s: %w", ErrorsTotal, err)
	}
	return &Metrics{
		Records:       records.With(l),
		Bytes:         bytes.With(l),
		WriteDuration: dur.With(l),
		errors:        curried,
	}, nil
}

// Error counts one failed Write of kind, a short word from a small fixed set
// that the sink documents ("write", "sync", "timeout", ...), never an error
// message: label values must stay few.
func (m *Metrics) Error(kind string) { m.errors.WithLabelValues(kind).Inc() }

// Register registers c with reg and returns it, or returns the collector of
// the same description already registered there, so that each family exists
// once per Registerer without any global bookkeeping. A nil reg registers
// nothing.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	var zero C
	return zero, fmt.Errorf("sinkmetrics: register: %w", err)
}
