// Package stdout is the sink that writes every envelope (CONTRACT C7) as one
// line of NDJSON to an io.Writer: os.Stdout in production (a pipe into
// another program, a container's log), a buffer in tests.
//
// It owns nothing but its writer's output: it neither opens nor closes the
// writer, and knows envelopes and batches, never the API, the windows or the
// checkpoint.
//
// Durability is the reader's: Write acknowledges a batch once its bytes are
// handed to the writer (and, when the writer is a regular file, fsynced).
// Use the file sink when the collector itself must hold the data.
package stdout
