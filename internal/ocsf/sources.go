package ocsf

import "strconv"

// source is the mapping of one source: its class, the top-level members
// it knows (in the seed's order, docs/ocsf.md has the table), and two
// steps: head decides what the event states first (activity, severity,
// status, metadata extras), body writes the class's attributes. Both mark
// each known member an attribute holds in full (rec.mapped); every other
// member goes to unmapped as sent.
type source struct {
	id        sourceID
	name      string
	edge      bool
	class     class
	fields    []string
	timeField int

	// Set by New.
	product []byte         // metadata.product as JSON
	index   map[string]int // field name -> index into fields
}

// newSources returns the mappings of the nine sources in CONTRACT order.
func newSources() []*source {
	return []*source{
		{id: srcChangedFiles, name: "changed_files", class: fileSystemActivity(), timeField: cfStartTime,
			fields: []string{"startTime", "endTime", "mid", "filePath", "filedataHash", "mtime", "size", "threatInfo"}},
		{id: srcConnections, name: "connections", class: networkActivity(), timeField: cnStartTime,
			fields: []string{"dstEntityId", "dstEntityType", "dstInBytes", "dstOutBytes", "endpointDetails", "startTime",
				"endTime", "numConns", "srcEntityId", "srcEntityType", "srcInBytes", "srcOutBytes"}},
		{id: srcDNS, name: "dns", class: dnsActivity(), timeField: dnCreatedTime,
			fields: []string{"createdTime", "mid", "fqdn", "hostIpAddr", "ttl", "dnsServerIp"}},
		{id: srcUserLogins, name: "user_logins", class: authentication(), timeField: ulCreatedTime,
			fields: []string{"createdTime", "mid", "activityTime", "activityType", "username", "uid", "sourceIpAddr"}},
		{id: srcAgentInfo, name: "agent_info", class: inventoryInfo(), timeField: aiCreatedTime,
			fields: []string{"agentVersion", "createdTime", "hostname", "ipAddr", "lastUpdate", "mid", "mode", "os", "status", "tags"}},
		{id: srcAuditLogs, name: "audit_logs", class: apiActivity(), timeField: alCreatedTime,
			fields: []string{"accountName", "createdTime", "eventDescription", "eventName", "userAction", "userName"}},
		{id: srcCloudActivities, name: "cloud_activities", class: apiActivity(), timeField: caStartTime,
			fields: []string{"startTime", "endTime", "eventType", "eventId", "eventModel", "eventActor", "eventMap"}},
		{id: srcEdgeAuditEvents, name: "edge_audit_events", edge: true, class: apiActivity(), timeField: eaCreateTime,
			fields: []string{"account_name", "auth_account_name", "auth_role", "auth_type", "auth_uuid", "client_ip",
				"create_time", "expire_time_sec", "matched_path", "method", "op", "path", "proto_version", "protocol",
				"request_body", "response_status", "response_status_text", "trace", "user_display_name", "user_login", "uuid"}},
		{id: srcEdgeAlerts, name: "edge_alerts", edge: true, class: detectionFinding(), timeField: efCreateTime,
			fields: []string{"account_name", "assignment_time", "closed_time", "create_time", "description", "event_type",
				"incident_status", "owner_display_name", "owner_uuid", "policy_action_taken", "related_entities",
				"severity", "status", "update_time", "uuid"}},
	}
}

// sourceID names a source's mapping; the steps are called by a switch,
// not through function values, so that a record's state stays on the
// stack.
type sourceID uint8

const (
	srcChangedFiles sourceID = iota
	srcConnections
	srcDNS
	srcUserLogins
	srcAgentInfo
	srcAuditLogs
	srcCloudActivities
	srcEdgeAuditEvents
	srcEdgeAlerts
)

// head runs the source's first step.
func (s *source) head(r *rec, h *head) {
	switch s.id {
	case srcChangedFiles:
		changedFileHead(r, h)
	case srcConnections:
		connectionHead(r, h)
	case srcDNS:
		dnsHead(r, h)
	case srcUserLogins:
		userLoginHead(r, h)
	case srcAgentInfo:
		agentInfoHead(r, h)
	case srcAuditLogs:
		auditLogHead(r, h)
	case srcCloudActivities:
		cloudActivityHead(r, h)
	case srcEdgeAuditEvents:
		edgeAuditHead(r, h)
	case srcEdgeAlerts:
		edgeAlertHead(r, h)
	}
}

// body runs the source's second step.
func (s *source) body(w *enc, r *rec) {
	switch s.id {
	case srcChangedFiles:
		changedFileBody(w, r)
	case srcConnections:
		connectionBody(w, r)
	case srcDNS:
		dnsBody(w, r)
	case srcUserLogins:
		userLoginBody(w, r)
	case srcAgentInfo:
		agentInfoBody(w, r)
	case srcAuditLogs:
		auditLogBody(w, r)
	case srcCloudActivities:
		cloudActivityBody(w, r)
	case srcEdgeAuditEvents:
		edgeAuditBody(w, r)
	case srcEdgeAlerts:
		edgeAlertBody(w, r)
	}
}

// profileHost declares the host profile, whose device and actor the
// network classes use (OCSF validators reject a profile's attributes
// unless metadata.profiles names it).
const profileHost = `["host"]`

// startEnd writes start_time and end_time from two time fields (end -1:
// none).
func startEnd(w *enc, r *rec, start, end int) {
	if ms, ok := r.timeIn(start, r.f[start]); ok {
		w.int("start_time", ms)
		r.mapped(start)
	}
	if end >= 0 {
		if ms, ok := r.timeIn(end, r.f[end]); ok {
			w.int("end_time", ms)
			r.mapped(end)
		}
	}
}

// device writes a device object identified by a machine id, or by a
// placeholder name. OCSF requires type_id; the records do not say what
// kind of machine it is.
func device(w *enc, mid ident) {
	w.open("device")
	w.int("type_id", 0)
	if mid.ok {
		w.id("uid", mid)
	} else {
		w.str("name", placeholder)
	}
	w.close()
}

// placeholderObject writes {"<key>": "Unknown"} under name.
func placeholderObject(w *enc, name, key string) {
	w.open(name)
	w.str(key, placeholder)
	w.close()
}

// platformSeverity maps the platform's severities 1 (critical) to 5
// (informational) to severity_id, 99 for other integers. The direction is
// the platform's convention for alert rules (seed: integers 1 to 5);
// docs/ocsf.md states it as an assumption.
func platformSeverity(n int64) int {
	if n >= 1 && n <= 5 {
		return int(6 - n)
	}
	return severityOther
}

// quotedInt appends n as a JSON string to the scratch space and returns
// the token.
func (r *rec) quotedInt(n int64) []byte {
	start := len(r.spare)
	r.spare = append(r.spare, '"')
	r.spare = strconv.AppendInt(r.spare, n, 10)
	r.spare = append(r.spare, '"')
	return r.spare[start:len(r.spare):len(r.spare)]
}
