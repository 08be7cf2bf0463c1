package apisim

import "net/http"

// Source names of CONTRACT C3 (core) and C6 (edge).
const (
	SourceChangedFiles    = "changed_files"
	SourceConnections     = "connections"
	SourceDNS             = "dns"
	SourceUserLogins      = "user_logins"
	SourceAgentInfo       = "agent_info"
	SourceAuditLogs       = "audit_logs"
	SourceCloudActivities = "cloud_activities"
	SourceEdgeAuditEvents = "edge_audit_events"
	SourceEdgeAlerts      = "edge_alerts"
)

// sourceID indexes sourceTable.
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
	numSources
)

// sourceInfo describes one source: where it is served and what its records
// hold. fields lists the top-level fields in the order they are served (the
// seed's order, then the fields no document names); filters and returns may
// name only these.
type sourceInfo struct {
	name      string
	path      string
	method    string
	timeField string
	edge      bool
	fields    []string
}

// sourceTable is read-only: the sources of C3 and C6 in sourceID order.
var sourceTable = [numSources]sourceInfo{
	srcChangedFiles: {
		name: SourceChangedFiles, path: "/api/v2/Activities/ChangedFiles/search", method: http.MethodPost, timeField: "startTime",
		fields: []string{"startTime", "endTime", "mid", "filePath", "filedataHash", "mtime", "size", "threatInfo", "_ingest"},
	},
	srcConnections: {
		name: SourceConnections, path: "/api/v2/Activities/Connections/search", method: http.MethodPost, timeField: "startTime",
		fields: []string{"dstEntityId", "dstEntityType", "dstInBytes", "dstOutBytes", "endpointDetails", "startTime", "endTime",
			"numConns", "srcEntityId", "srcEntityType", "srcInBytes", "srcOutBytes", "_ingest"},
	},
	srcDNS: {
		name: SourceDNS, path: "/api/v2/Activities/DNSs/search", method: http.MethodPost, timeField: "createdTime",
		fields: []string{"createdTime", "mid", "fqdn", "hostIpAddr", "ttl", "dnsServerIp", "_ingest"},
	},
	srcUserLogins: {
		name: SourceUserLogins, path: "/api/v2/Activities/UserLogins/search", method: http.MethodPost, timeField: "createdTime",
		fields: []string{"createdTime", "mid", "activityTime", "activityType", "username", "uid", "sourceIpAddr", "_ingest"},
	},
	srcAgentInfo: {
		name: SourceAgentInfo, path: "/api/v2/AgentInfo/search", method: http.MethodPost, timeField: "createdTime",
		fields: []string{"agentVersion", "createdTime", "hostname", "ipAddr", "lastUpdate", "mid", "mode", "os", "status", "tags", "_ingest"},
	},
	srcAuditLogs: {
		name: SourceAuditLogs, path: "/api/v2/AuditLogs/search", method: http.MethodPost, timeField: "createdTime",
		fields: []string{"accountName", "createdTime", "eventDescription", "eventName", "userAction", "userName", "_ingest"},
	},
	srcCloudActivities: {
		name: SourceCloudActivities, path: "/api/v2/CloudActivities", method: http.MethodGet, timeField: "startTime",
		fields: []string{"startTime", "endTime", "eventType", "eventId", "eventModel", "eventActor", "eventMap", "_ingest"},
	},
	srcEdgeAuditEvents: {
		name: SourceEdgeAuditEvents, path: "/edge/api/v1/audit_events", method: http.MethodGet, timeField: "create_time", edge: true,
		fields: []string{"account_name", "auth_account_name", "auth_role", "auth_type", "auth_uuid", "client_ip", "create_time",
			"expire_time_sec", "matched_path", "method", "op", "path", "proto_version", "protocol", "request_body",
			"response_status", "response_status_text", "trace", "user_display_name", "user_login", "uuid", "_ingest"},
	},
	srcEdgeAlerts: {
		name: SourceEdgeAlerts, path: "/edge/api/v1/alerts", method: http.MethodGet, timeField: "create_time", edge: true,
		fields: []string{"account_name", "assignment_time", "closed_time", "create_time", "description", "event_type",
			"incident_status", "owner_display_name", "owner_uuid", "policy_action_taken", "related_entities", "severity",
			"status", "update_time", "uuid", "_ingest"},
	},
}

func (id sourceID) info() *sourceInfo { return &sourceTable[id] }

func sourceByName(name string) (sourceID, bool) {
	for i := range sourceTable {
		if sourceTable[i].name == name {
			return sourceID(i), true
		}
	}
	return 0, false
}

// hasField reports whether name is a top-level field of the source's records.
func (si *sourceInfo) hasField(name string) bool {
	for _, f := range si.fields {
		if f == name {
			return true
		}
	}
	return false
}
