// Package edgemap maps the records of the edge API's two sources
// (CONTRACT C6: edge_audit_events, edge_alerts) to OCSF 1.3.0: Sources
// declares each source's class and known members, Head and Body run its
// two steps on a record. docs/ocsf.md has the table of every field and
// why each source gets its class.
//
// It imports the lower ocsf layers only (ocsfbase, ocsfrec, ocsfjson, and
// through them package record): not package ocsf, not the core API's
// mappings (internal/archtest).
package edgemap
