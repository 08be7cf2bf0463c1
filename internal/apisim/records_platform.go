package apisim

import "strconv"

// Records of agent information, audit logs and cloud activities, as the
// seed's "Activity records" table lists them.

// genAgentInfo: agentVersion, createdTime, hostname, ipAddr, lastUpdate,
// mid, mode (normal, ebpf), os, status (ACTIVE, INACTIVE), tags (string map).
func genAgentInfo(r *rec, x *rnd, st *stream, t int64) {
	mid := machine(x)
	a := r.mark()
	r.arena = append(r.arena, "6."...)
	r.arena = strconv.AppendInt(r.arena, int64(x.n(8)), 10)
	r.arena = append(r.arena, ".0-"...)
	r.arena = strconv.AppendInt(r.arena, int64(1000+x.n(9000)), 10)
	r.strFrom("agentVersion", a)
	r.time("createdTime", t)
	a = r.mark()
	r.arena = appendHostname(r.arena, mid)
	host := a
	r.strFrom("hostname", a)
	a = r.mark()
	r.arena = appendMachineIP(r.arena, mid)
	r.strFrom("ipAddr", a)
	r.time("lastUpdate", t-int64(x.n(3600000)))
	r.int("mid", mid)
	r.str("mode", [...]string{"normal", "ebpf"}[x.n(2)])
	r.str("os", osNames[mid%int64(len(osNames))])
	r.str("status", [...]string{"ACTIVE", "ACTIVE", "ACTIVE", "INACTIVE"}[x.n(4)])
	r.beginObj("tags")
	a = r.mark()
	r.arena = append(r.arena, r.arena[host:a]...) // copy of the hostname
	r.strFrom("Name", a)
	r.str("env", envNames[mid%3])
	r.str("team", teamNames[x.n(len(teamNames))])
	if mid%4 == 0 {
		// A tag name with a dot and a slash: filters reach it only with the
		// seed's quoted form, tags."kubernetes.io\/role".
		r.str("kubernetes.io/role", "node")
	}
	r.end()
}

// genAuditLog: accountName, createdTime (an ISO 8601 string, although the
// schema says integer), eventDescription, eventName, userAction, userName.
func genAuditLog(r *rec, x *rnd, st *stream, t int64) {
	if st.account == OrgAccount {
		r.str("accountName", "ORG")
	} else {
		r.str("accountName", st.account)
	}
	r.time("createdTime", t)
	ev := auditEvents[x.n(len(auditEvents))]
	u := x.n(len(displayNames))
	a := r.mark()
	r.arena = append(r.arena, "User "...)
	r.arena = append(r.arena, displayNames[u]...)
	r.arena = append(r.arena, ' ')
	r.arena = append(r.arena, ev[2]...)
	r.arena = append(r.arena, " in account "...)
	r.arena = append(r.arena, st.account...)
	r.strFrom("eventDescription", a)
	r.str("eventName", ev[0])
	r.str("userAction", ev[1])
	r.str("userName", emails[u])
}

// genCloudActivity: startTime, endTime, eventType, eventId (int),
// eventModel, eventActor, eventMap whose members API, CT_User, Region,
// Resource, RulesTriggered, SourceIpAddress are arrays of {KEY, PROPS}.
func genCloudActivity(r *rec, x *rnd, st *stream, t int64) {
	r.time("startTime", t)
	r.time("endTime", t+int64(x.n(60000)))
	r.str("eventType", cloudEvents[x.n(len(cloudEvents))])
	r.int("eventId", int64(x.next()>>24)) // < 2^40: exact in every JSON reader
	r.str("eventModel", "CloudTrailCep")
	r.str("eventActor", "ProvA")
	api := cloudAPIs[x.n(len(cloudAPIs))]
	u := x.n(len(userNames))
	acct := 100000000000 + int64(x.n(900000000))
	region := ingestRegions[x.n(len(ingestRegions))]
	r.beginObj("eventMap")

	r.beginArr("API")
	r.beginObj("")
	r.beginObj("KEY")
	r.str("service", api[0])
	r.str("api", api[1])
	r.end()
	r.beginObj("PROPS")
	r.beginArr("accessKeyIds")
	a := r.mark()
	r.arena = append(r.arena, "AKIA"...)
	r.arena = appendHex(r.arena, x.next(), 16)
	r.strFrom("", a)
	r.end()
	r.end()
	r.end()
	r.end()

	r.beginArr("CT_User")
	r.beginObj("")
	r.beginObj("KEY")
	r.str("username", userNames[u])
	r.int("account", acct)
	r.end()
	r.beginObj("PROPS")
	r.int("mfa", int64(x.n(2)))
	r.beginArr("api_list")
	r.str("", api[1])
	r.end()
	r.beginArr("region_list")
	r.str("", region)
	r.end()
	r.end()
	r.end()
	r.end()

	r.beginArr("Region")
	r.beginObj("")
	r.beginObj("KEY")
	r.str("region", region)
	r.end()
	r.beginObj("PROPS")
	r.beginArr("accountList")
	a = r.mark()
	r.arena = strconv.AppendInt(r.arena, acct, 10)
	r.strFrom("", a)
	r.end()
	r.end()
	r.end()
	r.end()

	r.beginArr("Resource")
	r.beginObj("")
	r.beginObj("KEY")
	r.str("name", "arn")
	a = r.mark()
	r.arena = append(r.arena, "arn:aws:s3:::daten-"...)
	r.arena = append(r.arena, envNames[x.n(3)]...)
	r.arena = append(r.arena, "/berichte/größe.csv"...)
	r.strFrom("value", a)
	r.end()
	r.beginObj("PROPS")
	r.str("resource", api[0])
	r.end()
	r.end()
	r.end()

	r.beginArr("RulesTriggered")
	if x.n(4) == 0 {
		r.beginObj("")
		r.beginObj("KEY")
		a = r.mark()
		r.arena = append(r.arena, "SVC_ProvA_"...)
		r.arena = strconv.AppendInt(r.arena, int64(1+x.n(99)), 10)
		r.strFrom("rule_guid", a)
		r.end()
		r.beginObj("PROPS")
		r.str("rule_name", "Root account used — Zugriff mit Root-Konto")
		r.int("severity", int64(1+x.n(5)))
		r.end()
		r.end()
	}
	r.end()

	r.beginArr("SourceIpAddress")
	r.beginObj("")
	r.beginObj("KEY")
	a = r.mark()
	r.arena = appendPublicIP(r.arena, x.next())
	r.strFrom("ip_address", a)
	r.end()
	r.beginObj("PROPS")
	p := places[x.n(len(places))]
	r.str("city", p[0])
	r.str("country", p[1])
	r.end()
	r.end()
	r.end()

	r.end() // eventMap
}
