// Package sinkhelper gives every sink what is the same in all of them, once,
// the way the OpenTelemetry Collector's exporterhelper gives every exporter
// its lifecycle and telemetry: a sink writes only its push function and the
// start, ready, drain and close steps that are its own, hands them to New,
// and embeds the *Base it gets back, whose Start, Write, Ready and Shutdown
// make the sink a sink.Sink (no sink forwards them). Start at New and Base.
//
// Base owns:
//
//   - the lifecycle: Start once; Write and Ready only between Start and
//     Shutdown (ErrNotStarted, ErrClosed otherwise); Shutdown safe twice and
//     without Start, honouring its ctx, waiting for the Writes in flight;
//   - the shared metrics collector_sink_records_total{sink},
//     collector_sink_bytes_total{sink},
//     collector_sink_write_duration_seconds{sink} and
//     collector_sink_errors_total{sink,kind}, counted around every Write;
//   - the dead-letter file of records a sink can never write, and
//     collector_dead_letters_total{sink,reason}.
//
// It knows envelopes and batches (package record) and the sink seam
// (package sink), nothing of files, brokers or tables, and holds no global
// state.
package sinkhelper
