// Package sink defines the seam between the pipeline and the systems the
// collector delivers to: the Sink interface and the permanent error class.
// Each sink lives in its own sub-package (file, stdout, kafka, clickhouse)
// and implements Sink on sinkhelper.Base, which gives them all one
// lifecycle, the shared collector_sink_* metrics and the dead-letter file;
// sinktest holds a recording Sink for tests. A sink knows envelopes and
// batches (package record) and nothing of the API, the windows or the
// checkpoint.
package sink
