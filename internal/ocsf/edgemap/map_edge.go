package edgemap

import (
	"github.com/svcexport/collector/internal/ocsf/ocsfbase"
	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/ocsf/ocsfrec"
)

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

func edgeAuditHead(r *ocsfrec.Record, h *ocsfbase.Head) {
	if tok, ok := r.Str(eaMethod); ok {
		switch {
		case r.EqualFold(tok, "POST"):
			h.Activity = 1
		case r.EqualFold(tok, "GET"), r.EqualFold(tok, "HEAD"):
			h.Activity = 2
		case r.EqualFold(tok, "PUT"), r.EqualFold(tok, "PATCH"):
			h.Activity = 3
		case r.EqualFold(tok, "DELETE"):
			h.Activity = 4
		default:
			h.Activity, h.ActivityName = ocsfbase.ActivityOther, tok
		}
	}
	if n, ok := r.Int32In(eaStatus, r.Field(eaStatus)); ok {
		switch {
		case n >= 100 && n < 400:
			h.Status = ocsfbase.StatusSuccess
		case n >= 400 && n < 600:
			h.Status = ocsfbase.StatusFailure
		default:
			h.Status, h.StatusName = ocsfbase.StatusOther, r.QuotedInt(n)
		}
	}
	if tok, ok := r.Str(eaAccount); ok {
		h.Tenant = tok
		r.Mapped(eaAccount)
	}
	if v := r.Field(eaTrace); !ocsfjson.IsNull(v) {
		// Only the trace id has an attribute; the member stays unmapped.
		var t [1][]byte
		if _, ok := r.Lookup(v, []string{"trace_id"}, t[:]); !ok {
			r.Fallback(eaTrace)
		} else if tok, ok := r.StrIn(eaTrace, t[0]); ok {
			h.Correlation = ocsfrec.Ident{Tok: tok, OK: true}
		}
	}
}

func edgeAuditBody(w *ocsfjson.Writer, r *ocsfrec.Record) {
	if n, ok := r.Int32In(eaStatus, r.Field(eaStatus)); ok {
		w.Key("status_code")
		w.AppendRaw(r.QuotedInt(n))
	}
	uid := r.ID(eaAuthUUID)
	login, loginOK := r.Str(eaLogin)
	display, displayOK := r.Str(eaDisplayName)
	acct, acctOK := r.Str(eaAuthAccount)
	w.Open("actor") // required
	if uid.OK || loginOK || displayOK || acctOK {
		w.Open("user")
		if uid.OK {
			ocsfrec.WriteID(w, "uid", uid)
			r.Mapped(eaAuthUUID)
		}
		if loginOK {
			w.Token("name", login)
			if ocsfrec.ValidEmail(r.Text(login)) {
				w.Token("email_addr", login)
			}
			r.Mapped(eaLogin)
		}
		if displayOK {
			w.Token("full_name", display)
			r.Mapped(eaDisplayName)
		}
		if acctOK {
			w.Open("account")
			w.Token("name", acct)
			w.Close()
			r.Mapped(eaAuthAccount)
		}
		w.Close()
	} else {
		w.Str("app_name", ocsfbase.Placeholder)
	}
	w.Close()

	w.Open("api") // required
	if tok, ok := r.Str(eaOp); ok {
		w.Token("operation", tok)
		r.Mapped(eaOp)
	} else {
		w.Str("operation", ocsfbase.Placeholder)
	}
	if tok, ok := r.Str(eaProtoVersion); ok {
		w.Token("version", tok)
		r.Mapped(eaProtoVersion)
	}
	if tok, ok := r.Str(eaUUID); ok {
		w.Open("request")
		w.Token("uid", tok)
		if v := r.Field(eaRequestBody); !ocsfjson.IsNull(v) {
			w.Raw("data", v) // json_t: any value, as sent
			r.Mapped(eaRequestBody)
		}
		w.Close()
		r.Mapped(eaUUID)
	}
	code, codeOK := r.Int32In(eaStatus, r.Field(eaStatus))
	text, textOK := r.Str(eaStatusText)
	if codeOK || textOK {
		w.Open("response")
		if codeOK {
			w.Int("code", code)
			r.Mapped(eaStatus)
		}
		if textOK {
			w.Token("message", text)
			r.Mapped(eaStatusText)
		}
		w.Close()
	}
	w.Close()

	method, methodOK := r.Str(eaMethod)
	path, pathOK := r.Str(eaPath)
	proto, protoOK := r.Str(eaProtocol)
	// OCSF 1.3.0 knows eight methods (http_request.http_method's enum has
	// no PATCH): another method stays unmapped, stated by activity_id and
	// api.operation only. It is no fallback: the value is well formed.
	methodOK = methodOK && httpMethod(r.Text(method))
	if methodOK || pathOK || protoOK {
		w.Open("http_request")
		if methodOK {
			w.Token("http_method", method)
			r.Mapped(eaMethod)
		}
		if pathOK {
			w.Open("url")
			w.Token("path", path)
			w.Close()
			r.Mapped(eaPath)
		}
		if protoOK {
			w.Token("version", proto)
			r.Mapped(eaProtocol)
		}
		w.Close()
	}
	w.Open("src_endpoint") // required
	if ip, _ := r.IPIn(eaClientIP, r.Field(eaClientIP)); ip != nil {
		w.Token("ip", ip)
		r.Mapped(eaClientIP)
	} else {
		w.Str("name", ocsfbase.Placeholder)
	}
	w.Close()
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

func edgeAlertHead(r *ocsfrec.Record, h *ocsfbase.Head) {
	closed := false
	if tok, ok := r.Str(efStatus); ok {
		switch {
		case r.EqualFold(tok, "OPEN"):
			h.Status = 1 // New
		case r.EqualFold(tok, "IN_PROGRESS"):
			h.Status = 2 // In Progress
		case r.EqualFold(tok, "CLOSED"):
			h.Status, closed = 4, true // Resolved
		default:
			h.Status, h.StatusName = ocsfbase.StatusOther, tok
		}
		r.Mapped(efStatus)
	}
	// C6: an alert is emitted again when it changes.
	created, _ := ocsfrec.TimeMs(r.Field(efCreateTime))
	updated, updatedOK := r.TimeIn(efUpdateTime, r.Field(efUpdateTime))
	switch {
	case closed:
		h.Activity = 3 // Close
	case updatedOK && updated > created:
		h.Activity = 2 // Update
	default:
		h.Activity = 1 // Create
	}
	h.Severity = ocsfbase.SeverityUnknown
	if n, ok := r.IntIn(efSeverity, r.Field(efSeverity)); ok {
		h.Severity = ocsfbase.PlatformSeverity(n)
		if h.Severity == ocsfbase.SeverityOther {
			h.SeverityName = r.QuotedInt(n)
		}
		r.Mapped(efSeverity)
	}
	if tok, ok := r.Str(efAccount); ok {
		h.Tenant = tok
		r.Mapped(efAccount)
	}
}

func edgeAlertBody(w *ocsfjson.Writer, r *ocsfrec.Record) {
	desc, descOK := r.Str(efDescription)
	typ, typOK := r.Str(efEventType)
	if descOK {
		w.Token("message", desc)
	}
	w.Open("finding_info") // required
	if tok, ok := r.Str(efUUID); ok {
		w.Token("uid", tok)
		r.Mapped(efUUID)
	} else {
		w.Str("uid", ocsfbase.Placeholder)
	}
	switch {
	case typOK:
		w.Token("title", typ)
	case descOK:
		w.Token("title", desc)
	default:
		w.Str("title", ocsfbase.Placeholder)
	}
	if descOK {
		w.Token("desc", desc)
		r.Mapped(efDescription)
	}
	if typOK {
		w.OpenArray("types")
		w.AppendRaw(typ)
		w.CloseArray()
		r.Mapped(efEventType)
	}
	if ms, ok := r.Time(efCreateTime); ok {
		w.Int("created_time", ms)
	}
	if ms, ok := r.Time(efUpdateTime); ok {
		w.Int("modified_time", ms)
		r.Mapped(efUpdateTime)
	}
	w.Close()
	if tok, ok := r.Str(efIncidentStatus); ok {
		w.Token("status_detail", tok)
		r.Mapped(efIncidentStatus)
	}
	// assignment_time, closed_time, owner_*, policy_action_taken and
	// related_entities have no attribute in Detection Finding 1.3.0.
}
