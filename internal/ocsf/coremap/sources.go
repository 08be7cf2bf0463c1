package coremap

import (
	"github.com/svcexport/collector/internal/ocsf/ocsfbase"
	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/ocsf/ocsfrec"
)

// The sources of this package, by ocsfbase.Source.ID; their steps are
// called by a switch, not through function values, so that a record's
// state stays on the stack.
const (
	srcChangedFiles = iota
	srcConnections
	srcDNS
	srcUserLogins
	srcAgentInfo
	srcAuditLogs
	srcCloudActivities
)

// Sources returns the mappings of the core API's seven sources in
// CONTRACT order (C3).
func Sources() []ocsfbase.Source {
	return []ocsfbase.Source{
		{ID: srcChangedFiles, Name: "changed_files", Class: ocsfbase.FileSystemActivity(), TimeField: cfStartTime,
			Fields: []string{"startTime", "endTime", "mid", "filePath", "filedataHash", "mtime", "size", "threatInfo"}},
		{ID: srcConnections, Name: "connections", Class: ocsfbase.NetworkActivity(), TimeField: cnStartTime,
			Fields: []string{"dstEntityId", "dstEntityType", "dstInBytes", "dstOutBytes", "endpointDetails", "startTime",
				"endTime", "numConns", "srcEntityId", "srcEntityType", "srcInBytes", "srcOutBytes"}},
		{ID: srcDNS, Name: "dns", Class: ocsfbase.DNSActivity(), TimeField: dnCreatedTime,
			Fields: []string{"createdTime", "mid", "fqdn", "hostIpAddr", "ttl", "dnsServerIp"}},
		{ID: srcUserLogins, Name: "user_logins", Class: ocsfbase.Authentication(), TimeField: ulCreatedTime,
			Fields: []string{"createdTime", "mid", "activityTime", "activityType", "username", "uid", "sourceIpAddr"}},
		{ID: srcAgentInfo, Name: "agent_info", Class: ocsfbase.InventoryInfo(), TimeField: aiCreatedTime,
			Fields: []string{"agentVersion", "createdTime", "hostname", "ipAddr", "lastUpdate", "mid", "mode", "os", "status", "tags"}},
		{ID: srcAuditLogs, Name: "audit_logs", Class: ocsfbase.APIActivity(), TimeField: alCreatedTime,
			Fields: []string{"accountName", "createdTime", "eventDescription", "eventName", "userAction", "userName"}},
		{ID: srcCloudActivities, Name: "cloud_activities", Class: ocsfbase.APIActivity(), TimeField: caStartTime,
			Fields: []string{"startTime", "endTime", "eventType", "eventId", "eventModel", "eventActor", "eventMap"}},
	}
}

// Head runs the first step of source id: what the event states first.
func Head(id int, r *ocsfrec.Record, h *ocsfbase.Head) {
	switch id {
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
	}
}

// Body runs the second step of source id: the class's attributes.
func Body(id int, w *ocsfjson.Writer, r *ocsfrec.Record) {
	switch id {
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
	}
}

// profileHost declares the host profile, whose device and actor the
// network classes use (OCSF validators reject a profile's attributes
// unless metadata.profiles names it).
const profileHost = `["host"]`

// startEnd writes start_time and end_time from two time fields (end -1:
// none).
func startEnd(w *ocsfjson.Writer, r *ocsfrec.Record, start, end int) {
	if ms, ok := r.Time(start); ok {
		w.Int("start_time", ms)
		r.Mapped(start)
	}
	if end >= 0 {
		if ms, ok := r.Time(end); ok {
			w.Int("end_time", ms)
			r.Mapped(end)
		}
	}
}

// device writes a device object identified by a machine id, or by a
// placeholder name. OCSF requires type_id; the records do not say what
// kind of machine it is.
func device(w *ocsfjson.Writer, mid ocsfrec.Ident) {
	w.Open("device")
	w.Int("type_id", 0)
	if mid.OK {
		ocsfrec.WriteID(w, "uid", mid)
	} else {
		w.Str("name", ocsfbase.Placeholder)
	}
	w.Close()
}

// placeholderObject writes {"<key>": "Unknown"} under name.
func placeholderObject(w *ocsfjson.Writer, name, key string) {
	w.Open(name)
	w.Str(key, ocsfbase.Placeholder)
	w.Close()
}
