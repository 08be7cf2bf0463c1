package ocsf

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
