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

// changed_files: File System Activity.
const (
	cfStartTime = iota
	cfEndTime
	cfMid
	cfFilePath
	cfHash
	cfMtime
	cfSize
	cfThreatInfo
)

func changedFileHead(r *rec, h *head) {
	h.activity = 3 // Update: the platform reports files whose content changed
	v := r.f[cfThreatInfo]
	if isNull(v) {
		return
	}
	// threatTags and threatSource have no attribute in this class: the
	// member stays unmapped; its severity becomes the event's.
	var vals [1][]byte
	if _, ok := r.lookup(v, []string{"threatSeverity"}, vals[:]); !ok {
		r.fallback(cfThreatInfo)
		return
	}
	tok, ok := r.strIn(cfThreatInfo, vals[0])
	if !ok {
		return
	}
	switch {
	case r.equalFold(tok, "INFO"), r.equalFold(tok, "INFORMATIONAL"):
		h.severity = severityInformational
	case r.equalFold(tok, "LOW"):
		h.severity = severityLow
	case r.equalFold(tok, "MEDIUM"):
		h.severity = severityMedium
	case r.equalFold(tok, "HIGH"):
		h.severity = severityHigh
	case r.equalFold(tok, "CRITICAL"):
		h.severity = severityCritical
	default:
		h.severity, h.severityName = severityOther, tok
	}
}

func changedFileBody(w *enc, r *rec) {
	startEnd(w, r, cfStartTime, cfEndTime)
	// OCSF requires the actor; the platform does not say who changed the file.
	placeholderObject(w, "actor", "app_name")
	mid := r.id(cfMid)
	device(w, mid) // required
	if mid.ok {
		r.mapped(cfMid)
	}

	w.open("file")
	if tok, ok := r.str(cfFilePath); ok {
		p := r.text(tok)
		name, parent := splitPath(p)
		if len(name) == 0 {
			name = p
		}
		if len(name) == 0 {
			w.str("name", placeholder)
		} else {
			w.strBytes("name", name)
		}
		w.token("path", tok)
		if parent != nil {
			w.strBytes("parent_folder", parent)
		}
		if ext := extension(name); ext != nil {
			w.strBytes("ext", ext)
		}
		r.mapped(cfFilePath)
	} else {
		w.str("name", placeholder)
	}
	w.int("type_id", 1)
	w.str("type", "Regular File")
	if tok, ok := r.str(cfHash); ok {
		if alg, name := hashAlgorithm(r.text(tok)); alg >= 0 {
			w.openArray("hashes")
			w.open("")
			w.int("algorithm_id", int64(alg))
			w.str("algorithm", name)
			w.token("value", tok)
			w.close()
			w.closeArray()
			r.mapped(cfHash)
		} else {
			r.fallback(cfHash)
		}
	}
	if ms, ok := r.time(cfMtime); ok {
		w.int("modified_time", ms)
		r.mapped(cfMtime)
	}
	if n, ok := r.integer(cfSize); ok {
		w.int("size", n)
		r.mapped(cfSize)
	}
	w.close()
}

// splitPath splits a POSIX or Windows path into its last element and the
// folder holding it (nil when there is none).
func splitPath(p []byte) (name, parent []byte) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' || p[i] == '\\' {
			if i == 0 {
				return p[1:], p[:1]
			}
			return p[i+1:], p[:i]
		}
	}
	return p, nil
}

// extension returns what follows the last dot of a file name, without the
// dot, or nil.
func extension(name []byte) []byte {
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '.' {
			if i == len(name)-1 {
				return nil
			}
			return name[i+1:]
		}
	}
	return nil
}

// hashAlgorithm names a hex digest by its length (fingerprint
// algorithm_id); -1 when the value does not fit file_hash_t.
func hashAlgorithm(s []byte) (int, string) {
	if len(s) == 0 || len(s) > maxFileHash {
		return -1, ""
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return 0, "Unknown"
		}
	}
	switch len(s) {
	case 32:
		return 1, "MD5"
	case 40:
		return 2, "SHA-1"
	case 64:
		return 3, "SHA-256"
	}
	return 0, "Unknown"
}

// connections: Network Activity.
const (
	cnDstEntity = iota
	cnDstEntityType
	cnDstInBytes
	cnDstOutBytes
	cnEndpoints
	cnStartTime
	cnEndTime
	cnNumConns
	cnSrcEntity
	cnSrcEntityType
	cnSrcInBytes
	cnSrcOutBytes
)

func connectionHead(r *rec, h *head) {
	h.activity = 6 // Traffic: a record sums up connections between two entities
	h.profiles = profileHost
}

func connectionBody(w *enc, r *rec) {
	startEnd(w, r, cnStartTime, cnEndTime)
	if n, ok := r.int32In(cnNumConns, r.f[cnNumConns]); ok {
		w.int("count", n)
		r.mapped(cnNumConns)
	}

	// endpointDetails: the first element is typed; the member is mapped in
	// full only when it holds exactly one element and nothing else.
	var ep [4][]byte // dst_ip_addr, dst_port, protocol, src_ip_addr
	epWhole := false
	if v := r.f[cnEndpoints]; !isNull(v) {
		el, n, ok := first(v)
		switch {
		case !ok:
			r.fallback(cnEndpoints)
		case n > 0:
			extra, isObj := r.lookup(el, []string{"dst_ip_addr", "dst_port", "protocol", "src_ip_addr"}, ep[:])
			if !isObj {
				r.fallback(cnEndpoints)
			}
			epWhole = isObj && n == 1 && extra == 0
		}
	}
	srcIP, _ := r.ipIn(cnEndpoints, ep[3])
	dstIP, _ := r.ipIn(cnEndpoints, ep[0])
	port, portOK := r.intIn(cnEndpoints, ep[1])
	if portOK && (port < 0 || port > 65535) {
		r.fallback(cnEndpoints)
		portOK = false
	}
	proto, protoOK := r.strIn(cnEndpoints, ep[2])
	epWhole = epWhole && (ep[0] == nil || dstIP != nil) && (ep[1] == nil || portOK) &&
		(ep[2] == nil || protoOK) && (ep[3] == nil || srcIP != nil)

	// srcEntityId {mid, pid_hash}: the initiating process on a machine.
	var se [2][]byte
	srcWhole := entity(r, cnSrcEntity, se[:])
	srcMid := r.idIn(cnSrcEntity, se[0])
	pid, pidOK := r.strIn(cnSrcEntity, se[1])
	if t := r.f[cnSrcEntityType]; pidOK && !isNull(t) && !(isString(t) && r.equalFold(t, "Process")) {
		pidOK = false // the hash of something that is no process: no attribute
	}
	srcWhole = srcWhole && (se[0] == nil || srcMid.ok) && (se[1] == nil || pidOK)

	var de [2][]byte
	dstWhole := entity(r, cnDstEntity, de[:])
	dstMid := r.idIn(cnDstEntity, de[0])
	// pid_hash of the responder: Network Activity has no attribute for it.
	dstWhole = dstWhole && (de[0] == nil || dstMid.ok) && de[1] == nil

	if srcMid.ok || srcIP != nil {
		w.open("src_endpoint")
		if srcMid.ok {
			w.id("uid", srcMid)
		}
		if srcIP != nil {
			w.token("ip", srcIP)
		}
		w.close()
	}
	w.open("dst_endpoint") // required
	if dstMid.ok {
		w.id("uid", dstMid)
	}
	if dstIP != nil {
		w.token("ip", dstIP)
	}
	if portOK {
		w.int("port", port)
	}
	if !dstMid.ok && dstIP == nil {
		w.str("name", placeholder)
	}
	w.close()
	if protoOK {
		w.open("connection_info")
		w.int("direction_id", 0) // required; the record does not say
		start := len(r.spare)
		for _, c := range r.text(proto) {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			r.spare = append(r.spare, c)
		}
		lower := r.spare[start:]
		w.strBytes("protocol_name", lower)
		switch string(lower) {
		case "tcp":
			w.int("protocol_num", 6)
		case "udp":
			w.int("protocol_num", 17)
		case "icmp":
			w.int("protocol_num", 1)
		}
		w.close()
	}
	in, inOK := r.intIn(cnSrcInBytes, r.f[cnSrcInBytes])
	out, outOK := r.intIn(cnSrcOutBytes, r.f[cnSrcOutBytes])
	if inOK || outOK {
		// The source entity's counters: what it received came from the
		// destination (bytes_in), what it sent went there (bytes_out).
		w.open("traffic")
		if inOK {
			w.int("bytes_in", in)
			r.mapped(cnSrcInBytes)
		}
		if outOK {
			w.int("bytes_out", out)
			r.mapped(cnSrcOutBytes)
		}
		if inOK && outOK && in >= 0 && out >= 0 && in <= 1<<62 && out <= 1<<62 {
			w.int("bytes", in+out)
		}
		w.close()
	}
	if pidOK {
		w.open("actor")
		w.open("process")
		w.token("uid", pid)
		w.close()
		w.close()
	}
	if epWhole {
		r.mapped(cnEndpoints)
	}
	if srcWhole {
		r.mapped(cnSrcEntity)
	}
	if dstWhole {
		r.mapped(cnDstEntity)
	}
}

// entity looks up mid and pid_hash in the entity id object of field i and
// reports whether it holds nothing else.
func entity(r *rec, i int, vals [][]byte) bool {
	v := r.f[i]
	if isNull(v) {
		return false
	}
	extra, ok := r.lookup(v, []string{"mid", "pid_hash"}, vals)
	if !ok {
		r.fallback(i)
	}
	return ok && extra == 0
}

// idIn reads v, a value inside field i, as an identifier; null or absent
// is no identifier and no fallback.
func (r *rec) idIn(i int, v []byte) ident {
	if isNull(v) {
		return ident{}
	}
	return r.idOf(i, v)
}

// dns: DNS Activity.
const (
	dnCreatedTime = iota
	dnMid
	dnFqdn
	dnHostIP
	dnTTL
	dnServer
)

func dnsHead(r *rec, h *head) {
	h.activity = 6 // Traffic: a summary holds the query and its answer
	h.profiles = profileHost
}

func dnsBody(w *enc, r *rec) {
	if mid := r.id(dnMid); mid.ok {
		device(w, mid)
		r.mapped(dnMid)
	}
	if tok, isStr, valid := r.hostnameIn(dnFqdn, r.f[dnFqdn]); valid {
		w.open("query")
		w.token("hostname", tok)
		w.close()
		r.mapped(dnFqdn)
	} else if isStr {
		r.fallback(dnFqdn) // not a hostname_t (e.g. a trailing dot)
	}
	if tok, ok := r.str(dnHostIP); ok {
		w.openArray("answers")
		w.open("")
		w.token("rdata", tok)
		switch ipVersion(r.text(tok)) {
		case 4:
			w.str("type", "A")
		case 6:
			w.str("type", "AAAA")
		}
		if ttl, ok := r.int32In(dnTTL, r.f[dnTTL]); ok {
			w.int("ttl", ttl)
			r.mapped(dnTTL)
		}
		w.close()
		w.closeArray()
		r.mapped(dnHostIP)
	}
	if ip, _ := r.ipIn(dnServer, r.f[dnServer]); ip != nil {
		w.open("dst_endpoint")
		w.token("ip", ip)
		w.close()
		r.mapped(dnServer)
	}
}

// user_logins: Authentication.
const (
	ulCreatedTime = iota
	ulMid
	ulActivityTime
	ulActivityType
	ulUsername
	ulUID
	ulSourceIP
)

func userLoginHead(r *rec, h *head) {
	h.profiles = profileHost
	tok, ok := r.str(ulActivityType)
	if !ok {
		return
	}
	switch {
	case r.equalFold(tok, "LOGIN"), r.equalFold(tok, "LOGON"):
		h.activity = 1
	case r.equalFold(tok, "LOGOFF"), r.equalFold(tok, "LOGOUT"):
		h.activity = 2
	default:
		h.activity, h.activityName = activityOther, tok
	}
	r.mapped(ulActivityType)
}

func userLoginBody(w *enc, r *rec) {
	startEnd(w, r, ulActivityTime, -1)
	w.open("user") // required
	name, nameOK := r.str(ulUsername)
	uid := r.id(ulUID)
	if nameOK {
		w.token("name", name)
		r.mapped(ulUsername)
	}
	if uid.ok {
		w.id("uid", uid)
		r.mapped(ulUID)
	}
	if !nameOK && !uid.ok {
		w.str("name", placeholder)
	}
	w.close()
	if ip, _ := r.ipIn(ulSourceIP, r.f[ulSourceIP]); ip != nil {
		w.open("src_endpoint")
		w.token("ip", ip)
		w.close()
		r.mapped(ulSourceIP)
	}
	// The machine logged on to: OCSF wants a service or a dst_endpoint.
	w.open("dst_endpoint")
	mid := r.id(ulMid)
	if mid.ok {
		w.id("uid", mid)
	} else {
		w.str("name", placeholder)
	}
	w.close()
	if mid.ok {
		device(w, mid)
		r.mapped(ulMid)
	}
}

// agent_info: Device Inventory Info.
const (
	aiAgentVersion = iota
	aiCreatedTime
	aiHostname
	aiIP
	aiLastUpdate
	aiMid
	aiMode
	aiOS
	aiStatus
	aiTags
)

func agentInfoHead(r *rec, h *head) {
	h.activity = 1 // Log: the agent reports its host
}

func agentInfoBody(w *enc, r *rec) {
	w.open("device") // required
	w.int("type_id", 0)
	named := false
	mid := r.id(aiMid)
	if mid.ok {
		w.id("uid", mid)
		r.mapped(aiMid)
		named = true
	}
	if tok, isStr, valid := r.hostnameIn(aiHostname, r.f[aiHostname]); isStr {
		// name is any string; hostname only what hostname_t allows (no
		// Unicode labels: those stay in name).
		w.token("name", tok)
		if valid {
			w.token("hostname", tok)
		}
		r.mapped(aiHostname)
		named = true
	}
	if ip, _ := r.ipIn(aiIP, r.f[aiIP]); ip != nil {
		w.token("ip", ip)
		r.mapped(aiIP)
		named = true
	}
	if !named {
		w.str("name", placeholder)
	}
	if ms, ok := r.time(aiLastUpdate); ok {
		w.int("last_seen_time", ms)
		r.mapped(aiLastUpdate)
	}
	if tok, ok := r.str(aiOS); ok {
		w.open("os")
		w.token("name", tok)
		switch {
		case r.hasPrefixFold(tok, "Windows"):
			w.int("type_id", 100)
		case r.equalFold(tok, "Linux"):
			w.int("type_id", 200)
		case r.equalFold(tok, "Darwin"), r.hasPrefixFold(tok, "macOS"), r.hasPrefixFold(tok, "Mac OS"):
			w.int("type_id", 300)
		default:
			w.int("type_id", 0)
		}
		w.close()
		r.mapped(aiOS)
	}
	if tok, ok := r.str(aiAgentVersion); ok {
		w.openArray("agent_list")
		w.open("")
		if mid.ok {
			w.id("uid", mid) // the platform knows an agent by its machine
		} else {
			w.str("name", placeholder)
		}
		w.token("version", tok)
		w.close()
		w.closeArray()
		r.mapped(aiAgentVersion)
	}
	w.close()
	// mode, status and tags: no attribute in OCSF 1.3.0's device.
}

// audit_logs: API Activity.
const (
	alAccount = iota
	alCreatedTime
	alDescription
	alEventName
	alUserAction
	alUserName
)

func auditLogHead(r *rec, h *head) {
	if tok, ok := r.str(alUserAction); ok {
		h.activity, h.activityName = crud(r, tok)
		r.mapped(alUserAction)
	}
	if tok, ok := r.str(alAccount); ok {
		h.tenant = tok
		r.mapped(alAccount)
	}
}

// crud maps an action verb to API Activity's activity_id.
func crud(r *rec, tok []byte) (int, []byte) {
	switch {
	case r.equalFold(tok, "Create"):
		return 1, nil
	case r.equalFold(tok, "Read"):
		return 2, nil
	case r.equalFold(tok, "Update"):
		return 3, nil
	case r.equalFold(tok, "Delete"):
		return 4, nil
	}
	return activityOther, tok
}

func auditLogBody(w *enc, r *rec) {
	w.open("actor") // required
	if tok, ok := r.str(alUserName); ok {
		w.open("user")
		w.token("name", tok)
		if validEmail(r.text(tok)) {
			w.token("email_addr", tok)
		}
		w.close()
		r.mapped(alUserName)
	} else {
		w.str("app_name", placeholder)
	}
	w.close()
	w.open("api") // required
	if tok, ok := r.str(alEventName); ok {
		w.token("operation", tok)
		r.mapped(alEventName)
	} else {
		w.str("operation", placeholder)
	}
	w.close()
	if tok, ok := r.str(alDescription); ok {
		w.token("message", tok)
		r.mapped(alDescription)
	}
	// Required; audit logs do not say where the user connected from.
	placeholderObject(w, "src_endpoint", "name")
}

// cloud_activities: API Activity.
const (
	caStartTime = iota
	caEndTime
	caEventType
	caEventID
	caEventModel
	caEventActor
	caEventMap
)

// Slots of rec.x: parts of eventMap the head finds for the body.
const (
	xService = iota
	xAPI
	xAccessKey
	xUser
	xAccount
	xRegion
	xResource
	xResourceType
	xSourceIP
	xCity
)

func cloudActivityHead(r *rec, h *head) {
	if tok, ok := r.str(caEventType); ok {
		h.eventCode = tok
		r.mapped(caEventType)
	}
	if v := r.id(caEventID); v.ok {
		h.correlation = v
		r.mapped(caEventID)
	}
	if tok, ok := r.str(caEventModel); ok {
		h.logProvider = tok
		r.mapped(caEventModel)
	}
	if _, ok := r.str(caEventActor); ok {
		h.profiles = `["cloud"]` // cloud.provider comes from eventActor
	}
	em := r.f[caEventMap]
	if isNull(em) {
		return
	}
	var parts [6][]byte
	if _, ok := r.find(em, []string{"API", "CT_User", "Region", "Resource", "RulesTriggered", "SourceIpAddress"}, parts[:], false); !ok {
		r.fallback(caEventMap)
		return
	}
	key, props := r.keyProps(parts[0])
	r.pick(key, []string{"service", "api"}, r.x[xService:xAPI+1])
	var keys [1][]byte
	r.pick(props, []string{"accessKeyIds"}, keys[:])
	if k, ok := oneString(keys[0]); ok {
		r.x[xAccessKey] = k
	}
	key, _ = r.keyProps(parts[1])
	r.pick(key, []string{"username", "account"}, r.x[xUser:xAccount+1])
	key, _ = r.keyProps(parts[2])
	r.pick(key, []string{"region"}, r.x[xRegion:xRegion+1])
	key, props = r.keyProps(parts[3])
	r.pick(key, []string{"value"}, r.x[xResource:xResource+1])
	r.pick(props, []string{"resource"}, r.x[xResourceType:xResourceType+1])
	key, props = r.keyProps(parts[5])
	r.pick(key, []string{"ip_address"}, r.x[xSourceIP:xSourceIP+1])
	r.pick(props, []string{"city"}, r.x[xCity:xCity+1])

	if tok, ok := r.strIn(caEventMap, r.x[xAPI]); ok {
		h.activity, h.activityName = apiVerb(r, tok)
	}
	// The event is as severe as the most severe rule it triggered.
	it, ok := arrayElements(parts[4])
	if !ok {
		return
	}
	best, bestName := 0, []byte(nil)
	for {
		el, more := it.next()
		if !more {
			break
		}
		var sev [1][]byte
		_, props := r.keyProps(el)
		r.pick(props, []string{"severity"}, sev[:])
		n, ok := r.intIn(caEventMap, sev[0])
		if !ok {
			continue
		}
		switch s := platformSeverity(n); {
		case s == severityOther:
			if best == 0 {
				best, bestName = s, r.quotedInt(n)
			}
		case best == 0 || best == severityOther || s > best:
			best, bestName = s, nil
		}
	}
	if best != 0 {
		h.severity, h.severityName = best, bestName
	}
}

// keyProps returns KEY and PROPS of the first {KEY, PROPS} element of the
// eventMap array raw.
func (r *rec) keyProps(raw []byte) (key, props []byte) {
	var kp [2][]byte
	r.pick(head1(raw), []string{"KEY", "PROPS"}, kp[:])
	return kp[0], kp[1]
}

// apiVerb maps a cloud API call name to an activity_id by its verb, the
// way cloud audit trails are commonly normalized; other calls are Other
// with the call's name.
func apiVerb(r *rec, tok []byte) (int, []byte) {
	for _, v := range [...]struct {
		prefix string
		id     int
	}{
		{"Create", 1}, {"Add", 1},
		{"Get", 2}, {"List", 2}, {"Describe", 2}, {"Head", 2}, {"Lookup", 2},
		{"Update", 3}, {"Put", 3}, {"Modify", 3}, {"Set", 3}, {"Attach", 3}, {"Authorize", 3},
		{"Delete", 4}, {"Remove", 4}, {"Detach", 4}, {"Revoke", 4}, {"Terminate", 4},
	} {
		if r.hasPrefixFold(tok, v.prefix) {
			return v.id, nil
		}
	}
	return activityOther, tok
}

func cloudActivityBody(w *enc, r *rec) {
	startEnd(w, r, caStartTime, caEndTime)
	x := &r.x
	user, userOK := r.strIn(caEventMap, x[xUser])
	account := r.idIn(caEventMap, x[xAccount])
	key, keyOK := r.strIn(caEventMap, x[xAccessKey])
	w.open("actor") // required
	if userOK || account.ok || keyOK {
		w.open("user")
		if userOK {
			w.token("name", user)
		}
		if keyOK {
			w.token("credential_uid", key)
		}
		if account.ok {
			w.open("account")
			w.id("uid", account)
			w.close()
		}
		w.close()
	} else {
		w.str("app_name", placeholder)
	}
	w.close()
	w.open("api") // required
	if tok, ok := r.strIn(caEventMap, x[xAPI]); ok {
		w.token("operation", tok)
	} else {
		w.str("operation", placeholder)
	}
	if tok, ok := r.strIn(caEventMap, x[xService]); ok {
		w.open("service")
		w.token("name", tok)
		w.close()
	}
	w.close()
	if tok, ok := r.str(caEventActor); ok {
		w.open("cloud")
		w.token("provider", tok)
		if region, ok := r.strIn(caEventMap, x[xRegion]); ok {
			w.token("region", region)
		}
		w.close()
		r.mapped(caEventActor)
	}
	if tok, ok := r.strIn(caEventMap, x[xResource]); ok {
		w.openArray("resources")
		w.open("")
		w.token("uid", tok)
		if typ, ok := r.strIn(caEventMap, x[xResourceType]); ok {
			w.token("type", typ)
		}
		w.close()
		w.closeArray()
	}
	ip, _ := r.ipIn(caEventMap, x[xSourceIP])
	city, _ := r.strIn(caEventMap, x[xCity])
	w.open("src_endpoint") // required
	if ip != nil {
		w.token("ip", ip)
	}
	if city != nil {
		w.open("location")
		w.token("city", city)
		w.close()
	}
	if ip == nil && city == nil {
		w.str("name", placeholder)
	}
	w.close()
	// eventMap stays under unmapped as sent: most of it has no attribute.
}

// edge_audit_events: API Activity.
const (
	eaAccount = iota
	eaAuthAccount
	eaAuthRole
	eaAuthType
	eaAuthUUID
	eaClientIP
	eaCreateTime
	eaExpire
	eaMatchedPath
	eaMethod
	eaOp
	eaPath
	eaProtoVersion
	eaProtocol
	eaRequestBody
	eaStatus
	eaStatusText
	eaTrace
	eaDisplayName
	eaLogin
	eaUUID
)

func edgeAuditHead(r *rec, h *head) {
	if tok, ok := r.str(eaMethod); ok {
		switch {
		case r.equalFold(tok, "POST"):
			h.activity = 1
		case r.equalFold(tok, "GET"), r.equalFold(tok, "HEAD"):
			h.activity = 2
		case r.equalFold(tok, "PUT"), r.equalFold(tok, "PATCH"):
			h.activity = 3
		case r.equalFold(tok, "DELETE"):
			h.activity = 4
		default:
			h.activity, h.activityName = activityOther, tok
		}
	}
	if n, ok := r.int32In(eaStatus, r.f[eaStatus]); ok {
		switch {
		case n >= 100 && n < 400:
			h.status = statusSuccess
		case n >= 400 && n < 600:
			h.status = statusFailure
		default:
			h.status, h.statusName = statusOther, r.quotedInt(n)
		}
	}
	if tok, ok := r.str(eaAccount); ok {
		h.tenant = tok
		r.mapped(eaAccount)
	}
	if v := r.f[eaTrace]; !isNull(v) {
		// Only the trace id has an attribute; the member stays unmapped.
		var t [1][]byte
		if _, ok := r.lookup(v, []string{"trace_id"}, t[:]); !ok {
			r.fallback(eaTrace)
		} else if tok, ok := r.strIn(eaTrace, t[0]); ok {
			h.correlation = ident{tok: tok, ok: true}
		}
	}
}

func edgeAuditBody(w *enc, r *rec) {
	if n, ok := r.int32In(eaStatus, r.f[eaStatus]); ok {
		w.key("status_code")
		w.b = append(w.b, r.quotedInt(n)...)
	}
	uid := r.id(eaAuthUUID)
	login, loginOK := r.str(eaLogin)
	display, displayOK := r.str(eaDisplayName)
	acct, acctOK := r.str(eaAuthAccount)
	w.open("actor") // required
	if uid.ok || loginOK || displayOK || acctOK {
		w.open("user")
		if uid.ok {
			w.id("uid", uid)
			r.mapped(eaAuthUUID)
		}
		if loginOK {
			w.token("name", login)
			if validEmail(r.text(login)) {
				w.token("email_addr", login)
			}
			r.mapped(eaLogin)
		}
		if displayOK {
			w.token("full_name", display)
			r.mapped(eaDisplayName)
		}
		if acctOK {
			w.open("account")
			w.token("name", acct)
			w.close()
			r.mapped(eaAuthAccount)
		}
		w.close()
	} else {
		w.str("app_name", placeholder)
	}
	w.close()

	w.open("api") // required
	if tok, ok := r.str(eaOp); ok {
		w.token("operation", tok)
		r.mapped(eaOp)
	} else {
		w.str("operation", placeholder)
	}
	if tok, ok := r.str(eaProtoVersion); ok {
		w.token("version", tok)
		r.mapped(eaProtoVersion)
	}
	if tok, ok := r.str(eaUUID); ok {
		w.open("request")
		w.token("uid", tok)
		if v := r.f[eaRequestBody]; !isNull(v) {
			w.raw("data", v) // json_t: any value, as sent
			r.mapped(eaRequestBody)
		}
		w.close()
		r.mapped(eaUUID)
	}
	code, codeOK := r.int32In(eaStatus, r.f[eaStatus])
	text, textOK := r.str(eaStatusText)
	if codeOK || textOK {
		w.open("response")
		if codeOK {
			w.int("code", code)
			r.mapped(eaStatus)
		}
		if textOK {
			w.token("message", text)
			r.mapped(eaStatusText)
		}
		w.close()
	}
	w.close()

	method, methodOK := r.str(eaMethod)
	path, pathOK := r.str(eaPath)
	proto, protoOK := r.str(eaProtocol)
	// OCSF 1.3.0 knows eight methods (http_request.http_method's enum has
	// no PATCH): another method stays unmapped, stated by activity_id and
	// api.operation only. It is no fallback: the value is well formed.
	methodOK = methodOK && httpMethod(r.text(method))
	if methodOK || pathOK || protoOK {
		w.open("http_request")
		if methodOK {
			w.token("http_method", method)
			r.mapped(eaMethod)
		}
		if pathOK {
			w.open("url")
			w.token("path", path)
			w.close()
			r.mapped(eaPath)
		}
		if protoOK {
			w.token("version", proto)
			r.mapped(eaProtocol)
		}
		w.close()
	}
	w.open("src_endpoint") // required
	if ip, _ := r.ipIn(eaClientIP, r.f[eaClientIP]); ip != nil {
		w.token("ip", ip)
		r.mapped(eaClientIP)
	} else {
		w.str("name", placeholder)
	}
	w.close()
	// auth_role, auth_type (undocumented codes), expire_time_sec,
	// matched_path and trace have no attribute in OCSF 1.3.0.
}

// httpMethod reports whether m is in OCSF 1.3.0's http_method enum.
func httpMethod(m []byte) bool {
	switch string(m) {
	case "CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "TRACE":
		return true
	}
	return false
}

// edge_alerts: Detection Finding.
const (
	efAccount = iota
	efAssignmentTime
	efClosedTime
	efCreateTime
	efDescription
	efEventType
	efIncidentStatus
	efOwnerName
	efOwnerUUID
	efPolicyAction
	efRelated
	efSeverity
	efStatus
	efUpdateTime
	efUUID
)

func edgeAlertHead(r *rec, h *head) {
	closed := false
	if tok, ok := r.str(efStatus); ok {
		switch {
		case r.equalFold(tok, "OPEN"):
			h.status = 1 // New
		case r.equalFold(tok, "IN_PROGRESS"):
			h.status = 2 // In Progress
		case r.equalFold(tok, "CLOSED"):
			h.status, closed = 4, true // Resolved
		default:
			h.status, h.statusName = statusOther, tok
		}
		r.mapped(efStatus)
	}
	// C6: an alert is emitted again when it changes.
	created, _ := timeMs(r.f[efCreateTime])
	updated, updatedOK := r.timeIn(efUpdateTime, r.f[efUpdateTime])
	switch {
	case closed:
		h.activity = 3 // Close
	case updatedOK && updated > created:
		h.activity = 2 // Update
	default:
		h.activity = 1 // Create
	}
	h.severity = severityUnknown
	if n, ok := r.intIn(efSeverity, r.f[efSeverity]); ok {
		h.severity = platformSeverity(n)
		if h.severity == severityOther {
			h.severityName = r.quotedInt(n)
		}
		r.mapped(efSeverity)
	}
	if tok, ok := r.str(efAccount); ok {
		h.tenant = tok
		r.mapped(efAccount)
	}
}

func edgeAlertBody(w *enc, r *rec) {
	desc, descOK := r.str(efDescription)
	typ, typOK := r.str(efEventType)
	if descOK {
		w.token("message", desc)
	}
	w.open("finding_info") // required
	if tok, ok := r.str(efUUID); ok {
		w.token("uid", tok)
		r.mapped(efUUID)
	} else {
		w.str("uid", placeholder)
	}
	switch {
	case typOK:
		w.token("title", typ)
	case descOK:
		w.token("title", desc)
	default:
		w.str("title", placeholder)
	}
	if descOK {
		w.token("desc", desc)
		r.mapped(efDescription)
	}
	if typOK {
		w.openArray("types")
		w.b = append(w.b, typ...)
		w.closeArray()
		r.mapped(efEventType)
	}
	if ms, ok := r.time(efCreateTime); ok {
		w.int("created_time", ms)
	}
	if ms, ok := r.time(efUpdateTime); ok {
		w.int("modified_time", ms)
		r.mapped(efUpdateTime)
	}
	w.close()
	if tok, ok := r.str(efIncidentStatus); ok {
		w.token("status_detail", tok)
		r.mapped(efIncidentStatus)
	}
	// assignment_time, closed_time, owner_*, policy_action_taken and
	// related_entities have no attribute in Detection Finding 1.3.0.
}
