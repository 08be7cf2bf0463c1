// Package sinktest provides Recorder, a sink.Sink for the tests of other
// packages (the pipeline, the daemon): it keeps deep copies of the batches
// written to it, and can be told to fail writes or to hold them until
// released, to test retries and backpressure. It is imported by tests only.
package sinktest
