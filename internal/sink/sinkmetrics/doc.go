// Package sinkmetrics owns the metric families every sink shares, the
// collector_sink_* series labelled by sink ("file", "stdout", "kafka",
// "clickhouse"). A sink builds its Metrics with New from the Registerer it is
// handed; several sinks on one Registerer share the same families.
//
// It holds no global state and knows nothing of files, brokers or tables:
// metrics that only one sink has (files rotated, broker round trips) belong to
// that sink's package.
package sinkmetrics
