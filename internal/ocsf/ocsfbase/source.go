package ocsfbase

import "github.com/svcexport/collector/internal/ocsf/ocsfrec"

// Source is the mapping of one source as a mapping package (coremap,
// edgemap) declares it: its class, the top-level members it knows (in the
// seed's order; docs/ocsf.md has the table) and which of them is the
// record time. Its two steps are the package's Head and Body for ID:
// Head decides what the event states first, Body writes the class's
// attributes. Both mark each known member an attribute holds in full
// (ocsfrec.Record.Mapped); every other member goes to unmapped as sent.
type Source struct {
	ID        int      // the source's steps in the package that declares it
	Name      string   // the source, as record.Envelope.Source names it
	Edge      bool     // a source of the edge API (C6), not of the core API (C3)
	Class     Class    // the OCSF class of its events
	Fields    []string // the known members, at most 32, by field index
	TimeField int      // the field index of the record time
}

// Head is what every event states before its class-specific attributes,
// as a source's first step finds it in the record.
type Head struct {
	Activity     int           // activity_id of the class
	ActivityName []byte        // the source's own value (a string token) for activity 99
	Severity     int           // severity_id; package ocsf sets Informational first
	SeverityName []byte        // the source's own value (a JSON string) for severity 99
	Status       int           // 0: no status_id
	StatusName   []byte        // the source's own value for status 99
	Profiles     string        // metadata.profiles as a JSON array, or ""
	Tenant       []byte        // the record's own account (a string token), or nil
	EventCode    []byte        // metadata.event_code (a string token), or nil
	Correlation  ocsfrec.Ident // metadata.correlation_uid
	LogProvider  []byte        // metadata.log_provider (a string token), or nil
}

// Placeholder is written where OCSF requires an attribute that the record
// does not supply (see docs/ocsf.md).
const Placeholder = "Unknown"

// PlatformSeverity maps the platform's severities 1 (critical) to 5
// (informational) to severity_id, 99 for other integers. The direction is
// the platform's convention for alert rules (seed: integers 1 to 5);
// docs/ocsf.md states it as an assumption.
func PlatformSeverity(n int64) int {
	if n >= 1 && n <= 5 {
		return int(6 - n)
	}
	return SeverityOther
}
