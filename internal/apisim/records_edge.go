package apisim

import "strconv"

// Records of the edge API (C6): the seed's "Audit event" and "Alert" rows.
// All edge times are integer milliseconds.

// genEdgeAuditEvent writes an audit event; create_time is the record time.
func genEdgeAuditEvent(r *rec, x *rnd, st *stream, t int64) {
	u := x.n(len(displayNames))
	r.str("account_name", st.account)
	r.str("auth_account_name", st.account)
	r.int("auth_role", int64(x.n(4)))
	r.int("auth_type", int64(x.n(3)))
	a := r.mark()
	r.arena = appendUUID(r.arena, mix64(uint64(u)+11), mix64(uint64(u)+12))
	r.strFrom("auth_uuid", a)
	a = r.mark()
	r.arena = appendPublicIP(r.arena, x.next())
	r.strFrom("client_ip", a)
	r.int("create_time", t)
	r.int("expire_time_sec", 90*86400)
	m := httpMethods[x.n(len(httpMethods))]
	p := edgePaths[x.n(len(edgePaths))]
	r.str("matched_path", p[1])
	r.str("method", m)
	a = r.mark()
	r.arena = append(r.arena, m...)
	r.arena = append(r.arena, ' ')
	r.arena = append(r.arena, p[1]...)
	r.strFrom("op", a)
	r.str("path", p[0])
	r.str("proto_version", "v1")
	r.str("protocol", "HTTP/2.0")
	a = r.mark()
	if m == "GET" || m == "DELETE" {
		r.arena = append(r.arena, "{}"...)
	} else {
		r.arena = append(r.arena, `{"name":"app-東京-`...)
		r.arena = strconv.AppendInt(r.arena, int64(x.n(100)), 10)
		r.arena = append(r.arena, `","status":2,"note":"tab\there"}`...)
	}
	r.strFrom("request_body", a)
	status := [...]int64{200, 200, 200, 201, 400, 403, 404, 500}[x.n(8)]
	r.int("response_status", status)
	r.str("response_status_text", statusText(status))
	r.beginObj("trace")
	a = r.mark()
	r.arena = appendHex(r.arena, x.next(), 16)
	r.arena = appendHex(r.arena, x.next(), 16)
	r.strFrom("trace_id", a)
	a = r.mark()
	r.arena = appendHex(r.arena, x.next(), 16)
	r.strFrom("span_id", a)
	r.bool("sampled", x.n(2) == 0)
	r.end()
	r.str("user_display_name", displayNames[u])
	r.str("user_login", emails[u])
	a = r.mark()
	r.arena = appendUUID(r.arena, x.next(), x.next())
	r.strFrom("uuid", a)
}

func statusText(code int64) string {
	switch code {
	case 200:
		return "OK"
	case 201:
		return "Created"
	case 400:
		return "Bad Request"
	case 403:
		return "Forbidden"
	case 404:
		return "Not Found"
	}
	return "Internal Server Error"
}

// alertVersion tells which of an alert's updates happened by asOf (C6: an
// alert changes after creation). An alert gets 0, 1 or 2 updates at
// deterministic times within window ms after create_time.
func alertVersion(key uint64, created, asOf, window int64) (v int, upd [2]int64, n int) {
	u := rnd{s: key ^ saltUpd}
	n = u.n(3)
	if window <= 0 {
		return 0, upd, 0
	}
	upd[0] = created + 1 + int64(u.next()%uint64(window))
	upd[1] = upd[0] + 1 + int64(u.next()%uint64(created+window-upd[0]+1))
	for v < n && upd[v] <= asOf {
		v++
	}
	return v, upd, n
}

// genEdgeAlert writes an alert as it is at asOf: status OPEN, then
// IN_PROGRESS (or CLOSED when it gets one update only), then CLOSED, with
// incident_status, owner and update_time following.
func genEdgeAlert(r *rec, x *rnd, st *stream, key uint64, t, asOf, window int64) {
	v, upd, n := alertVersion(key, t, asOf, window)
	owner := x.n(len(displayNames))
	closeAt := x.n(len(alertClosing))
	status, incident := "OPEN", "NONE"
	var assigned, closed int64
	updated := t
	if v >= 1 {
		assigned, updated = upd[0], upd[0]
		status, incident = "IN_PROGRESS", "INVESTIGATING"
		if n == 1 {
			status, incident, closed = "CLOSED", alertClosing[closeAt], upd[0]
		}
	}
	if v >= 2 {
		updated, closed = upd[1], upd[1]
		status, incident = "CLOSED", alertClosing[closeAt]
	}
	typ := alertTypes[x.n(len(alertTypes))]
	place := places[x.n(len(places))]
	u := x.n(len(displayNames))

	r.str("account_name", st.account)
	r.int("assignment_time", assigned)
	r.int("closed_time", closed)
	r.int("create_time", t)
	a := r.mark()
	r.arena = append(r.arena, typ...)
	r.arena = append(r.arena, ": "...)
	r.arena = append(r.arena, displayNames[u]...)
	r.arena = append(r.arena, " from "...)
	r.arena = append(r.arena, place[0]...)
	r.arena = append(r.arena, ", "...)
	r.arena = append(r.arena, place[1]...)
	r.strFrom("description", a)
	r.str("event_type", typ)
	r.str("incident_status", incident)
	if v >= 1 {
		r.str("owner_display_name", displayNames[owner])
		a = r.mark()
		r.arena = appendUUID(r.arena, mix64(uint64(owner)+11), mix64(uint64(owner)+12))
		r.strFrom("owner_uuid", a)
	} else {
		r.str("owner_display_name", "")
		r.str("owner_uuid", "")
	}
	r.int("policy_action_taken", int64(x.n(5)))
	r.beginObj("related_entities")
	r.int("devices_count", int64(x.n(5)))
	r.int("users_count", int64(1+x.n(3)))
	r.end()
	r.int("severity", int64(1+x.n(5)))
	r.str("status", status)
	r.int("update_time", updated)
	a = r.mark()
	r.arena = appendUUID(r.arena, x.next(), x.next())
	r.strFrom("uuid", a)
}
