// Package sink defines the seam between the pipeline and the systems the
// collector delivers to. Each sink lives in its own sub-package (file,
// stdout, kafka, clickhouse) and implements Sink. A sink knows envelopes and
// batches (package record) and nothing of the API, the windows or the
// checkpoint.
package sink
