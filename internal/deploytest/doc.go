// Package deploytest holds the tests that keep the shipping files true to the
// code: the Dockerfile and scripts/release-build.sh (binaries, release
// archives and their SHA256SUMS), LICENSE, deploy/kubernetes, the Helm chart's
// values and alert rules (deploy/helm/collector), deploy/systemd (its
// credentials and the config's *_file keys), deploy/compose,
// deploy/prometheus, deploy/grafana and the configurations under configs/.
// No Docker engine or cluster is needed: the files are parsed and checked
// with the project's own code (config.Load, the metrics the packages
// register, the telemetry handler), and the release script builds the real
// binary, which runs the demo to be scraped. Rendering the chart and building
// the kustomize base with the real engines is the job of the separate module
// deploy/helm/test, which keeps Helm and kustomize out of this go.mod.
//
// The package has no code of its own besides this comment; everything is in
// _test.go files.
package deploytest
