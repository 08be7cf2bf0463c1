// Package stdout is the sink that writes every envelope (CONTRACT C7) as one
// line of NDJSON to an io.Writer: os.Stdout in production (a pipe into
// another program, a container's log), a buffer in tests. A line is the
// envelope (Config.Format "envelope", the default) or the record's OCSF
// 1.3.0 event (format "ocsf", package ocsf and docs/ocsf.md; values that
// do not fit the schema count in collector_ocsf_fallbacks_total{source}).
//
// It owns nothing but its writer's output: it neither opens nor closes the
// writer, and knows envelopes and batches, never the API, the windows or the
// checkpoint.
//
// Durability is the reader's: Write acknowledges a batch once its bytes are
// handed to the writer (and, when the writer is a regular file, fsynced).
// Use the file sink when the collector itself must hold the data.
//
// Lifecycle and the shared collector_sink_* metrics come from package
// sinkhelper; error kinds are write, sync, canceled, invalid and state.
//
// Only one error of this sink is permanent (sink.Permanent): with format
// "ocsf", a batch holding a record that the mapping can never take (a
// source without an OCSF class; kind invalid), refused before a byte is
// written. Every other batch is writable, so a failure is the writer's (a
// full disk behind a redirect, a stalled pipe), not the batch's, and may
// pass. A reader that
// closes the pipe of the real stdout does not reach the sink at all: Go
// ends the process with SIGPIPE on a write to a broken pipe on fd 1.
package stdout
