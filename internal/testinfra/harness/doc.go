// Package harness is the one way tests and benchmarks start the collector
// binary against the project's API simulator: the end-to-end tests
// (internal/e2e), the benchmarks (internal/bench) and the deployment tests
// (internal/deploytest) all use it, so that a scenario reads as the
// scenario: start a simulator, write a configuration, run, compare with
// truth.
//
// Its files are ordinary .go files so that several test packages can share
// them, but only _test.go files import it: no production package may (the
// import table of internal/archtest holds that).
//
// What it offers:
//
//   - Main, for TestMain: builds made on demand (CollectorBin, GoBuild,
//     ReleaseCollector, once per test binary) are removed after the tests,
//     the shared ClickHouse server of internal/testinfra/chtest is stopped,
//     and with CheckLeaks a passing run that leaves goroutines behind fails.
//   - StartSim: a simulator on loopback (internal/testinfra/simtest), with
//     QuickRates for tests that must stay quick under the race detector;
//     APIRecords asks it for a window's records as any client would.
//   - Config and New: one collector configuration written for a test (the
//     simulator, accounts, sources, budget, sink, metrics address,
//     environment). The Collector New returns runs `run --once` (RunOnce,
//     which also measures the process: wall, CPU, peak RSS, /metrics
//     gauges), starts the daemon (Start: a Process to signal, kill and
//     wait for), runs other commands (CLI; RunCLI without a
//     configuration), and compares its output with truth (Compare).
//     For the operator's commands: CLIOut keeps standard output and
//     standard error apart (state --json), RunCLIEnv runs with exactly a
//     given environment (a CI job without secrets), StartCLI starts a
//     command in the background (state --watch), and RunTerminal runs one
//     on a pseudo-terminal (github.com/creack/pty) to see what an operator
//     sees (the progress bars).
//   - ReadFileSink and EachEnvelope read what the file sink wrote;
//     CompareWithTruth compares an Output with the simulator's /_truth per
//     stream and UTC day (CONTRACT C8), edge records per envelope account
//     below the watermark of their one edge stream (WatermarkOf,
//     EnvelopeStreams, Output.Of: C6); Watermarks reads a stopped
//     collector's checkpoint; LiveState, Ready and ScrapeGauges read a
//     running one's /state, /readyz and /metrics.
//   - Small things every such test needs: FreeAddr and LowFreePort,
//     ReadProcMem and CPUTicks of a process, Tail of logs, DoneRows and
//     CountLogs of the collector's JSON log lines.
//
// The Kafka and ClickHouse read-back lives in the sub-packages kafkaharness
// and chharness, so that a test binary that needs neither links neither
// client.
//
// The helpers fail the test through the testing.TB they are given; none of
// them calls os.Exit. Package-level state is limited to the builds of the
// test binary (one collector binary per test process by design).
package harness
