// Package app is the body of cmd/collector's main: it assembles the
// collector's packages from a loaded configuration and runs one command
// with them. It wires; the work is done in the packages it wires.
//
// Commands:
//
//   - Run (app.go): the daemon: the in-process simulator when asked for,
//     the checks it shares with Check (preflight.go), the checkpoint, the
//     telemetry server, which answers while the sinks start and says what
//     the start waits for (startup.go), the sinks of the configuration
//     (sinks.go), the API clients and one poller per stream
//     (source.Build), the pipeline that joins them and the status
//     reporter; once or until ctx ends.
//   - Check, PrintConfig and State (commands.go): run's own checks
//     (preflight.go), reachability of the API and the sinks step by step
//     (probe.go), the effective configuration, and what the checkpoint
//     holds.
//   - Verify (verify.go): the checkpoint's snapshot, the plan and its
//     confirmation, the counter of the API (verify/apicount) and the
//     reader of the chosen sink, joined by verify.Run.
//   - Validate (simulator.go): the checks of a loaded configuration that
//     need the application (simulator.settings); simulator.go is the one
//     importer of apisim among the daemon's packages.
//
// Run, Check and Verify share one secret.Scrubber of every credential of
// the configuration (secrets.go), which the API clients extend as they
// read rotated secret files. The telemetry server serves /tap only when
// metrics.tap.enabled, behind its bearer token (package tap).
//
// A running daemon reloads its configuration at SIGHUP and at POST
// /-/reload (metrics.reload.enabled): the reloader loads it as the start
// did, refuses what needs a restart naming the key, and hands the streams
// that changed to source.Set.Update, the pipeline (Add, Remove, Restart),
// the status reporter and the tap; every other stream goes on.
//
// A shard that owns no tenant (shard: with more shards than tenants) runs
// idle rather than exit: it serves /metrics, /readyz (ready, with a check
// named shard) and an empty /state, opens no checkpoint and no sink, and
// takes its tenants at the next restart.
//
// It holds no logic of polling, delivering, checkpointing, counting or
// reporting: that lives in the package that owns it, and a function here
// that grows such logic belongs there. Only cmd/collector imports it.
package app
