// Package app assembles the collector from a configuration and runs its
// commands: Run (the daemon: the in-process simulator when asked for, the
// telemetry server, the checkpoint, the sink chosen by sink.type, the
// clients and one poller per stream, the pipeline that joins them and the
// status reporter), Check and State, and Validate, the checks of a loaded
// configuration that need the application (simulator.settings).
//
// It owns assembly only: it holds no logic of polling, delivering,
// checkpointing or reporting, which live in their packages. Files:
// app.go (Run), commands.go (Check, State), sinks.go (the sink of
// sink.type), simulator.go (the in-process simulator, the one importer of
// apisim among the daemon's packages), probe.go (step-by-step
// reachability for check). Only cmd/collector imports it.
package app
