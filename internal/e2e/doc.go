// Package e2e holds the end-to-end tests of the collector: the real binary,
// built once per test run, against the project's API simulator over
// loopback, writing into real sinks, with its output compared to the
// simulator's ground truth (CONTRACT C8). It has no code of its own.
package e2e
