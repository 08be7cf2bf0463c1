package ocsf_test

import (
	"testing"

	"github.com/svcexport/collector/internal/ocsf/ocsftest"
)

// schema is the test-side validator of OCSF 1.3.0 events, shared with the
// sinks' tests (package ocsftest).
type schema = ocsftest.Schema

// loadSchema reads the vendored schema once per test binary.
func loadSchema(t testing.TB) *schema {
	t.Helper()
	return ocsftest.Load(t)
}
