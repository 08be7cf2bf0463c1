package sinkhelper

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the metric families every sink shares, labelled by sink.
const (
	RecordsTotal         = "collector_sink_records_total"
	BytesTotal           = "collector_sink_bytes_total"
	WriteDurationSeconds = "collector_sink_write_duration_seconds"
	ErrorsTotal          = "collector_sink_errors_total"
	DeadLettersTotal     = "collector_dead_letters_total"
)

// DurationBuckets returns the buckets of
// collector_sink_write_duration_seconds, from a 1 ms fsync to a 30 s
// insert; sinks use them for their own latencies too.
func DurationBuckets() []float64 {
	return []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
}

// metrics are the shared series of one sink, its sink label applied.
type metrics struct {
	records     prometheus.Counter
	bytes       prometheus.Counter
	duration    prometheus.Observer
	errors      *prometheus.CounterVec // label kind
	deadLetters *prometheus.CounterVec // label reason; nil without dead letters
}

// newMetrics registers the shared families with reg, or reuses those
// another sink registered there, and returns the series of sink. A nil reg
// gives working metrics that nobody exports.
func newMetrics(reg prometheus.Registerer, sink string, deadLetters bool) (*metrics, error) {
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
		Buckets: DurationBuckets(),
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
	m := &metrics{records: records.With(l), bytes: bytes.With(l), duration: dur.With(l)}
	if m.errors, err = errs.CurryWith(l); err != nil {
		return nil, fmt.Errorf("%s: %w", ErrorsTotal, err)
	}
	if !deadLetters {
		return m, nil
	}
	dl, err := Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: DeadLettersTotal,
		Help: "Records written to a dead-letter file instead of their destination, by sink and reason.",
	}, []string{"sink", "reason"}))
	if err != nil {
		return nil, err
	}
	if m.deadLetters, err = dl.CurryWith(l); err != nil {
		return nil, fmt.Errorf("%s: %w", DeadLettersTotal, err)
	}
	return m, nil
}

// Register registers c with reg and returns it, or returns the collector of
// the same description already registered there, so that each family
// exists once per Registerer without any global bookkeeping. A nil reg
// registers nothing. It fails when reg holds an incompatible collector of
// the same name.
//
// Through a Registerer of Named, c goes to the Registerer underneath
// unchanged: it is a family with a variable sink label, whose value is
// NameOf(reg, ...).
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	reg = unwrap(reg)
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	var zero C
	return zero, fmt.Errorf("register: %w", err)
}
