// Package app assembles the collector from a configuration: the in-process
// simulator when asked for, the telemetry server, the checkpoint, the sink
// chosen by sink.type, the budget and one poller per stream, and the
// pipeline that joins them. It also answers the check and state commands.
// Only cmd/collector imports it.
package app
