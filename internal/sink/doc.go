// Package sink defines the seam between the pipeline and the systems the
// collector writes to: the Sink interface, the Ledger protocol of the sinks
// that store each record once, and the permanent error class. Each sink
// lives in its own sub-package (file, stdout, kafka, clickhouse) and embeds
// a sinkhelper.Base, whose Start, Write, Ready and Shutdown are the sink's:
// one lifecycle, the shared collector_sink_* metrics and the dead-letter
// file for all; sinktest holds a recording Sink for tests. A sink knows
// envelopes and batches (package record) and nothing of the API, the
// windows or the checkpoint.
package sink
