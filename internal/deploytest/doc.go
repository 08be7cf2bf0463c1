// Package deploytest holds the tests that keep the shipping files true to the
// code: the Dockerfile and scripts/release-build.sh, deploy/kubernetes,
// deploy/systemd, deploy/compose, deploy/prometheus, deploy/grafana and the
// configurations under configs/. No Docker engine or cluster is needed: the
// files are parsed and checked with the project's own code (config.Load, the
// metrics the packages register, the telemetry handler), and the release
// script builds the real binary, which runs the demo to be scraped.
//
// The package has no code of its own besides this comment; everything is in
// _test.go files.
package deploytest
