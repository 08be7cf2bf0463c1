// Package collector holds the collector's release version: the file
// VERSION beside this one, the one place it is written. The release build
// (scripts/release.sh, scripts/release-build.sh) stamps it into the binary;
// a build without stamps (go run, go build, a Docker build without
// --build-arg VERSION) reports it as VERSION-dev. The Helm chart's
// appVersion, the kustomize image tag and the changelog's newest release
// agree with it (internal/deploytest checks them).
package collector

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var versionFile string

// Version returns the release version written in VERSION, e.g. "0.1.0".
func Version() string { return strings.TrimSpace(versionFile) }
