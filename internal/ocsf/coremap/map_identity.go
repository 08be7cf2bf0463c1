package coremap

import (
	"github.com/svcexport/collector/internal/ocsf/ocsfbase"
	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/ocsf/ocsfrec"
)

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

func userLoginHead(r *ocsfrec.Record, h *ocsfbase.Head) {
	h.Profiles = profileHost
	tok, ok := r.Str(ulActivityType)
	if !ok {
		return
	}
	switch {
	case r.EqualFold(tok, "LOGIN"), r.EqualFold(tok, "LOGON"):
		h.Activity = 1
	case r.EqualFold(tok, "LOGOFF"), r.EqualFold(tok, "LOGOUT"):
		h.Activity = 2
	default:
		h.Activity, h.ActivityName = ocsfbase.ActivityOther, tok
	}
	r.Mapped(ulActivityType)
}

func userLoginBody(w *ocsfjson.Writer, r *ocsfrec.Record) {
	startEnd(w, r, ulActivityTime, -1)
	w.Open("user") // required
	name, nameOK := r.Str(ulUsername)
	uid := r.ID(ulUID)
	if nameOK {
		w.Token("name", name)
		r.Mapped(ulUsername)
	}
	if uid.OK {
		ocsfrec.WriteID(w, "uid", uid)
		r.Mapped(ulUID)
	}
	if !nameOK && !uid.OK {
		w.Str("name", ocsfbase.Placeholder)
	}
	w.Close()
	if ip, _ := r.IPIn(ulSourceIP, r.Field(ulSourceIP)); ip != nil {
		w.Open("src_endpoint")
		w.Token("ip", ip)
		w.Close()
		r.Mapped(ulSourceIP)
	}
	// The machine logged on to: OCSF wants a service or a dst_endpoint.
	w.Open("dst_endpoint")
	mid := r.ID(ulMid)
	if mid.OK {
		ocsfrec.WriteID(w, "uid", mid)
	} else {
		w.Str("name", ocsfbase.Placeholder)
	}
	w.Close()
	if mid.OK {
		device(w, mid)
		r.Mapped(ulMid)
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

func agentInfoHead(r *ocsfrec.Record, h *ocsfbase.Head) {
	h.Activity = 1 // Log: the agent reports its host
}

func agentInfoBody(w *ocsfjson.Writer, r *ocsfrec.Record) {
	w.Open("device") // required
	w.Int("type_id", 0)
	named := false
	mid := r.ID(aiMid)
	if mid.OK {
		ocsfrec.WriteID(w, "uid", mid)
		r.Mapped(aiMid)
		named = true
	}
	if tok, isStr, valid := r.HostnameIn(aiHostname, r.Field(aiHostname)); isStr {
		// name is any string; hostname only what hostname_t allows (no
		// Unicode labels: those stay in name).
		w.Token("name", tok)
		if valid {
			w.Token("hostname", tok)
		}
		r.Mapped(aiHostname)
		named = true
	}
	if ip, _ := r.IPIn(aiIP, r.Field(aiIP)); ip != nil {
		w.Token("ip", ip)
		r.Mapped(aiIP)
		named = true
	}
	if !named {
		w.Str("name", ocsfbase.Placeholder)
	}
	if ms, ok := r.Time(aiLastUpdate); ok {
		w.Int("last_seen_time", ms)
		r.Mapped(aiLastUpdate)
	}
	if tok, ok := r.Str(aiOS); ok {
		w.Open("os")
		w.Token("name", tok)
		switch {
		case r.HasPrefixFold(tok, "Windows"):
			w.Int("type_id", 100)
		case r.EqualFold(tok, "Linux"):
			w.Int("type_id", 200)
		case r.EqualFold(tok, "Darwin"), r.HasPrefixFold(tok, "macOS"), r.HasPrefixFold(tok, "Mac OS"):
			w.Int("type_id", 300)
		default:
			w.Int("type_id", 0)
		}
		w.Close()
		r.Mapped(aiOS)
	}
	if tok, ok := r.Str(aiAgentVersion); ok {
		w.OpenArray("agent_list")
		w.Open("")
		if mid.OK {
			ocsfrec.WriteID(w, "uid", mid) // the platform knows an agent by its machine
		} else {
			w.Str("name", ocsfbase.Placeholder)
		}
		w.Token("version", tok)
		w.Close()
		w.CloseArray()
		r.Mapped(aiAgentVersion)
	}
	w.Close()
	// mode, status and tags: no attribute in OCSF 1.3.0's device.
}
