// Package coremap maps the records of the core API's seven sources
// (CONTRACT C3: changed_files, connections, dns, user_logins, agent_info,
// audit_logs, cloud_activities) to OCSF 1.3.0: Sources declares each
// source's class and known members, Head and Body run its two steps on a
// record. docs/ocsf.md has the table of every field and why each source
// gets its class.
//
// It imports the lower ocsf layers only (ocsfbase, ocsfrec, ocsfjson, and
// through them package record): not package ocsf, not the edge API's
// mappings (internal/archtest).
package coremap
