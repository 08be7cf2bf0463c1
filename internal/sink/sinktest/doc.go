// Package sinktest provides Recorder, a sink.Sink for tests: it keeps deep
// copies of the batches written to it, and can be told to fail writes or to
// hold them until released, to test retries, backpressure and shutdown
// without sleeping. The sinkhelper tests build their toy sink on it; the
// pipeline's and the daemon's tests may use it as their sink. It is
// imported by tests only.
package sinktest
