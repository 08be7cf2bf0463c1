package main

import (
	"regexp"
	"testing"

	"github.com/svcexport/collector"
)

// A build without -ldflags stamps (go run, go build, a Docker build
// without VERSION; a test binary is one) says the version it leads to,
// VERSION-dev, never a bare "dev".
func TestBuildInfoWithoutStampsSaysTheVersionFile(t *testing.T) {
	t.Parallel()
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(collector.Version()) {
		t.Fatalf("VERSION holds %q, want MAJOR.MINOR.PATCH", collector.Version())
	}
	v, c, d := buildInfo()
	if want := collector.Version() + "-dev"; v != want {
		t.Errorf("buildInfo() version = %q, want %q", v, want)
	}
	if c == "" || d == "" {
		t.Errorf("buildInfo() commit %q, date %q: want \"unknown\" at least", c, d)
	}
}
