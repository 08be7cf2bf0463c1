// Package ocsftest is the test-side validator of OCSF 1.3.0 events: it
// reads the schema's own source files vendored under
// internal/ocsf/testdata/ocsf-schema-1.3.0 and checks an event as the OCSF
// server's validator does (docs/ocsf.md, "How the events are checked").
// The tests of package ocsf and of every sink that writes OCSF (file,
// stdout, kafka) and the end-to-end tests hold their events to it.
//
// Tests only: no production package may import it (internal/archtest). It
// owns nothing but the validator; the mapping is package ocsf's.
package ocsftest
