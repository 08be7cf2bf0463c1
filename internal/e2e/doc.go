// Package e2e holds the end-to-end tests of the collector: the real binary,
// built once per test run, against the project's API simulator over
// loopback, writing into real sinks, with its output compared to the
// simulator's ground truth (CONTRACT C8). It has no code of its own, and
// its test files hold only scenarios: starting the binary and the
// simulator, configurations, reading the sinks back and comparing with
// truth is the harness's (internal/testinfra/harness and its kafkaharness
// and chharness), shared with the benchmarks and the deployment tests.
package e2e
