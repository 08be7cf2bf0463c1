package ocsf

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
