package coremap

import (
	"github.com/svcexport/collector/internal/ocsf/ocsfbase"
	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/ocsf/ocsfrec"
)

// audit_logs: API Activity.
const (
	alAccount = iota
	alCreatedTime
	alDescription
	alEventName
	alUserAction
	alUserName
)

func auditLogHead(r *ocsfrec.Record, h *ocsfbase.Head) {
	if tok, ok := r.Str(alUserAction); ok {
		h.Activity, h.ActivityName = crud(r, tok)
		r.Mapped(alUserAction)
	}
	if tok, ok := r.Str(alAccount); ok {
		h.Tenant = tok
		r.Mapped(alAccount)
	}
}

// crud maps an action verb to API Activity's activity_id.
func crud(r *ocsfrec.Record, tok []byte) (int, []byte) {
	switch {
	case r.EqualFold(tok, "Create"):
		return 1, nil
	case r.EqualFold(tok, "Read"):
		return 2, nil
	case r.EqualFold(tok, "Update"):
		return 3, nil
	case r.EqualFold(tok, "Delete"):
		return 4, nil
	}
	return ocsfbase.ActivityOther, tok
}

func auditLogBody(w *ocsfjson.Writer, r *ocsfrec.Record) {
	w.Open("actor") // required
	if tok, ok := r.Str(alUserName); ok {
		w.Open("user")
		w.Token("name", tok)
		if ocsfrec.ValidEmail(r.Text(tok)) {
			w.Token("email_addr", tok)
		}
		w.Close()
		r.Mapped(alUserName)
	} else {
		w.Str("app_name", ocsfbase.Placeholder)
	}
	w.Close()
	w.Open("api") // required
	if tok, ok := r.Str(alEventName); ok {
		w.Token("operation", tok)
		r.Mapped(alEventName)
	} else {
		w.Str("operation", ocsfbase.Placeholder)
	}
	w.Close()
	if tok, ok := r.Str(alDescription); ok {
		w.Token("message", tok)
		r.Mapped(alDescription)
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

// Slots of Record.Parts: parts of eventMap the head finds for the body.
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

func cloudActivityHead(r *ocsfrec.Record, h *ocsfbase.Head) {
	if tok, ok := r.Str(caEventType); ok {
		h.EventCode = tok
		r.Mapped(caEventType)
	}
	if v := r.ID(caEventID); v.OK {
		h.Correlation = v
		r.Mapped(caEventID)
	}
	if tok, ok := r.Str(caEventModel); ok {
		h.LogProvider = tok
		r.Mapped(caEventModel)
	}
	if _, ok := r.Str(caEventActor); ok {
		h.Profiles = `["cloud"]` // cloud.provider comes from eventActor
	}
	em := r.Field(caEventMap)
	if ocsfjson.IsNull(em) {
		return
	}
	var parts [6][]byte
	if !r.Pick(em, []string{"API", "CT_User", "Region", "Resource", "RulesTriggered", "SourceIpAddress"}, parts[:]) {
		r.Fallback(caEventMap)
		return
	}
	x := r.Parts()
	key, props := keyProps(r, parts[0])
	r.Pick(key, []string{"service", "api"}, x[xService:xAPI+1])
	var keys [1][]byte
	r.Pick(props, []string{"accessKeyIds"}, keys[:])
	if k, ok := oneString(keys[0]); ok {
		x[xAccessKey] = k
	}
	key, _ = keyProps(r, parts[1])
	r.Pick(key, []string{"username", "account"}, x[xUser:xAccount+1])
	key, _ = keyProps(r, parts[2])
	r.Pick(key, []string{"region"}, x[xRegion:xRegion+1])
	key, props = keyProps(r, parts[3])
	r.Pick(key, []string{"value"}, x[xResource:xResource+1])
	r.Pick(props, []string{"resource"}, x[xResourceType:xResourceType+1])
	key, props = keyProps(r, parts[5])
	r.Pick(key, []string{"ip_address"}, x[xSourceIP:xSourceIP+1])
	r.Pick(props, []string{"city"}, x[xCity:xCity+1])

	if tok, ok := r.StrIn(caEventMap, x[xAPI]); ok {
		h.Activity, h.ActivityName = apiVerb(r, tok)
	}
	// The event is as severe as the most severe rule it triggered.
	it, ok := ocsfjson.ArrayElements(parts[4])
	if !ok {
		return
	}
	best, bestName := 0, []byte(nil)
	for {
		el, more := it.Next()
		if !more {
			break
		}
		var sev [1][]byte
		_, props := keyProps(r, el)
		r.Pick(props, []string{"severity"}, sev[:])
		n, ok := r.IntIn(caEventMap, sev[0])
		if !ok {
			continue
		}
		switch s := ocsfbase.PlatformSeverity(n); {
		case s == ocsfbase.SeverityOther:
			if best == 0 {
				best, bestName = s, r.QuotedInt(n)
			}
		case best == 0 || best == ocsfbase.SeverityOther || s > best:
			best, bestName = s, nil
		}
	}
	if best != 0 {
		h.Severity, h.SeverityName = best, bestName
	}
}

// keyProps returns KEY and PROPS of the first {KEY, PROPS} element of the
// eventMap array raw.
func keyProps(r *ocsfrec.Record, raw []byte) (key, props []byte) {
	var kp [2][]byte
	r.Pick(head1(raw), []string{"KEY", "PROPS"}, kp[:])
	return kp[0], kp[1]
}

// apiVerb maps a cloud API call name to an activity_id by its verb, the
// way cloud audit trails are commonly normalized; other calls are Other
// with the call's name.
func apiVerb(r *ocsfrec.Record, tok []byte) (int, []byte) {
	for _, v := range [...]struct {
		prefix string
		id     int
	}{
		{"Create", 1}, {"Add", 1},
		{"Get", 2}, {"List", 2}, {"Describe", 2}, {"Head", 2}, {"Lookup", 2},
		{"Update", 3}, {"Put", 3}, {"Modify", 3}, {"Set", 3}, {"Attach", 3}, {"Authorize", 3},
		{"Delete", 4}, {"Remove", 4}, {"Detach", 4}, {"Revoke", 4}, {"Terminate", 4},
	} {
		if r.HasPrefixFold(tok, v.prefix) {
			return v.id, nil
		}
	}
	return ocsfbase.ActivityOther, tok
}

func cloudActivityBody(w *ocsfjson.Writer, r *ocsfrec.Record) {
	startEnd(w, r, caStartTime, caEndTime)
	x := r.Parts()
	user, userOK := r.StrIn(caEventMap, x[xUser])
	account := r.IDIn(caEventMap, x[xAccount])
	key, keyOK := r.StrIn(caEventMap, x[xAccessKey])
	w.Open("actor") // required
	if userOK || account.OK || keyOK {
		w.Open("user")
		if userOK {
			w.Token("name", user)
		}
		if keyOK {
			w.Token("credential_uid", key)
		}
		if account.OK {
			w.Open("account")
			ocsfrec.WriteID(w, "uid", account)
			w.Close()
		}
		w.Close()
	} else {
		w.Str("app_name", ocsfbase.Placeholder)
	}
	w.Close()
	w.Open("api") // required
	if tok, ok := r.StrIn(caEventMap, x[xAPI]); ok {
		w.Token("operation", tok)
	} else {
		w.Str("operation", ocsfbase.Placeholder)
	}
	if tok, ok := r.StrIn(caEventMap, x[xService]); ok {
		w.Open("service")
		w.Token("name", tok)
		w.Close()
	}
	w.Close()
	if tok, ok := r.Str(caEventActor); ok {
		w.Open("cloud")
		w.Token("provider", tok)
		if region, ok := r.StrIn(caEventMap, x[xRegion]); ok {
			w.Token("region", region)
		}
		w.Close()
		r.Mapped(caEventActor)
	}
	if tok, ok := r.StrIn(caEventMap, x[xResource]); ok {
		w.OpenArray("resources")
		w.Open("")
		w.Token("uid", tok)
		if typ, ok := r.StrIn(caEventMap, x[xResourceType]); ok {
			w.Token("type", typ)
		}
		w.Close()
		w.CloseArray()
	}
	ip, _ := r.IPIn(caEventMap, x[xSourceIP])
	city, _ := r.StrIn(caEventMap, x[xCity])
	w.Open("src_endpoint") // required
	if ip != nil {
		w.Token("ip", ip)
	}
	if city != nil {
		w.Open("location")
		w.Token("city", city)
		w.Close()
	}
	if ip == nil && city == nil {
		w.Str("name", ocsfbase.Placeholder)
	}
	w.Close()
	// eventMap stays under unmapped as sent: most of it has no attribute.
}
