package edgemap

import (
	"github.com/svcexport/collector/internal/ocsf/ocsfbase"
	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/ocsf/ocsfrec"
)

// The sources of this package, by ocsfbase.Source.ID; their steps are
// called by a switch, not through function values, so that a record's
// state stays on the stack.
const (
	srcEdgeAuditEvents = iota
	srcEdgeAlerts
)

// Sources returns the mappings of the edge API's two sources in CONTRACT
// order (C6).
func Sources() []ocsfbase.Source {
	return []ocsfbase.Source{
		{ID: srcEdgeAuditEvents, Name: "edge_audit_events", Edge: true, Class: ocsfbase.APIActivity(), TimeField: eaCreateTime,
			Fields: []string{"account_name", "auth_account_name", "auth_role", "auth_type", "auth_uuid", "client_ip",
				"create_time", "expire_time_sec", "matched_path", "method", "op", "path", "proto_version", "protocol",
				"request_body", "response_status", "response_status_text", "trace", "user_display_name", "user_login", "uuid"}},
		{ID: srcEdgeAlerts, Name: "edge_alerts", Edge: true, Class: ocsfbase.DetectionFinding(), TimeField: efCreateTime,
			Fields: []string{"account_name", "assignment_time", "closed_time", "create_time", "description", "event_type",
				"incident_status", "owner_display_name", "owner_uuid", "policy_action_taken", "related_entities",
				"severity", "status", "update_time", "uuid"}},
	}
}

// Head runs the first step of source id: what the event states first.
func Head(id int, r *ocsfrec.Record, h *ocsfbase.Head) {
	switch id {
	case srcEdgeAuditEvents:
		edgeAuditHead(r, h)
	case srcEdgeAlerts:
		edgeAlertHead(r, h)
	}
}

// Body runs the second step of source id: the class's attributes.
func Body(id int, w *ocsfjson.Writer, r *ocsfrec.Record) {
	switch id {
	case srcEdgeAuditEvents:
		edgeAuditBody(w, r)
	case srcEdgeAlerts:
		edgeAlertBody(w, r)
	}
}
