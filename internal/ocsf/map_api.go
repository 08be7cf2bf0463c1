package ocsf

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
