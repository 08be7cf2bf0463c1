package clickhouse

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the metrics this sink has besides the shared collector_sink_*
// ones (package sinkhelper).
const (
	MetricRowsInserted    = "collector_clickhouse_rows_inserted_total"
	MetricBytesInserted   = "collector_clickhouse_bytes_inserted_total"
	MetricInserts         = "collector_clickhouse_inserts_total"
	MetricInsertDuration  = "collector_clickhouse_insert_duration_seconds"
	MetricInsertErrors    = "collector_clickhouse_insert_errors_total"
	MetricRowsPerInsert   = "collector_clickhouse_rows_per_insert"
	metricsLabelTableName = "table"
)

// metrics are the ClickHouse sink's own series. All label values are table
// names: nine of them.
type metrics struct {
	rows      *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	inserts   *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	errors    *prometheus.CounterVec
	rowsPerIn prometheus.Histogram
	// readBackRows and readBackSeconds count Recover's read-backs.
	readBackRows    prometheus.Counter
	readBackSeconds prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{metricsLabelTableName})
	}
	m := &metrics{
		rows:    counter(MetricRowsInserted, "Rows ClickHouse confirmed, by table (a retried insert counts once)."),
		bytes:   counter(MetricBytesInserted, "Uncompressed bytes of the rows ClickHouse confirmed (raw records, strings, 8 bytes a number or time), by table."),
		inserts: counter(MetricInserts, "Inserts ClickHouse confirmed, by table."),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricInsertDuration,
			Help:    "Duration of one insert attempt (prepare, send, confirmation), failed ones included, by table.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{metricsLabelTableName}),
		errors: counter(MetricInsertErrors, "Failed insert attempts, by table (each retry of the same insert counts)."),
		rowsPerIn: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricRowsPerInsert,
			Help:    "Rows in each confirmed insert.",
			Buckets: []float64{10, 100, 1000, 5000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000},
		}),
		readBackRows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_clickhouse_read_back_rows_total",
			Help: "Rows a start read back as inserted past the checkpoint's mark (delivery exactly_once): stored before a crash, they are not inserted again.",
		}),
		readBackSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "collector_clickhouse_read_back_seconds_total",
			Help: "Time starts spent reading back the rows inserted past the checkpoint's mark.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.rows, m.bytes, m.inserts, m.duration, m.errors, m.rowsPerIn, m.readBackRows, m.readBackSeconds} {
		if err := reg.Register(c); err != nil {
			if _, dup := errors.AsType[prometheus.AlreadyRegisteredError](err); dup {
				return nil, fmt.Errorf("register clickhouse sink metrics: a second ClickHouse sink on one registry: %w", err)
			}
			return nil, fmt.Errorf("register clickhouse sink metrics: %w", err)
		}
	}
	return m, nil
}
