package coremap

import (
	"github.com/svcexport/collector/internal/ocsf/ocsfbase"
	"github.com/svcexport/collector/internal/ocsf/ocsfjson"
	"github.com/svcexport/collector/internal/ocsf/ocsfrec"
)

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

func connectionHead(r *ocsfrec.Record, h *ocsfbase.Head) {
	h.Activity = 6 // Traffic: a record sums up connections between two entities
	h.Profiles = profileHost
}

func connectionBody(w *ocsfjson.Writer, r *ocsfrec.Record) {
	startEnd(w, r, cnStartTime, cnEndTime)
	if n, ok := r.Int32In(cnNumConns, r.Field(cnNumConns)); ok {
		w.Int("count", n)
		r.Mapped(cnNumConns)
	}

	// endpointDetails: the first element is typed; the member is mapped in
	// full only when it holds exactly one element and nothing else.
	var ep [4][]byte // dst_ip_addr, dst_port, protocol, src_ip_addr
	epWhole := false
	if v := r.Field(cnEndpoints); !ocsfjson.IsNull(v) {
		el, n, ok := first(v)
		switch {
		case !ok:
			r.Fallback(cnEndpoints)
		case n > 0:
			extra, isObj := r.Lookup(el, []string{"dst_ip_addr", "dst_port", "protocol", "src_ip_addr"}, ep[:])
			if !isObj {
				r.Fallback(cnEndpoints)
			}
			epWhole = isObj && n == 1 && extra == 0
		}
	}
	srcIP, _ := r.IPIn(cnEndpoints, ep[3])
	dstIP, _ := r.IPIn(cnEndpoints, ep[0])
	port, portOK := r.IntIn(cnEndpoints, ep[1])
	if portOK && (port < 0 || port > 65535) {
		r.Fallback(cnEndpoints)
		portOK = false
	}
	proto, protoOK := r.StrIn(cnEndpoints, ep[2])
	epWhole = epWhole && (ep[0] == nil || dstIP != nil) && (ep[1] == nil || portOK) &&
		(ep[2] == nil || protoOK) && (ep[3] == nil || srcIP != nil)

	// srcEntityId {mid, pid_hash}: the initiating process on a machine.
	var se [2][]byte
	srcWhole := entity(r, cnSrcEntity, se[:])
	srcMid := r.IDIn(cnSrcEntity, se[0])
	pid, pidOK := r.StrIn(cnSrcEntity, se[1])
	if t := r.Field(cnSrcEntityType); pidOK && !ocsfjson.IsNull(t) && !(ocsfjson.IsString(t) && r.EqualFold(t, "Process")) {
		pidOK = false // the hash of something that is no process: no attribute
	}
	srcWhole = srcWhole && (se[0] == nil || srcMid.OK) && (se[1] == nil || pidOK)

	var de [2][]byte
	dstWhole := entity(r, cnDstEntity, de[:])
	dstMid := r.IDIn(cnDstEntity, de[0])
	// pid_hash of the responder: Network Activity has no attribute for it.
	dstWhole = dstWhole && (de[0] == nil || dstMid.OK) && de[1] == nil

	if srcMid.OK || srcIP != nil {
		w.Open("src_endpoint")
		if srcMid.OK {
			ocsfrec.WriteID(w, "uid", srcMid)
		}
		if srcIP != nil {
			w.Token("ip", srcIP)
		}
		w.Close()
	}
	w.Open("dst_endpoint") // required
	if dstMid.OK {
		ocsfrec.WriteID(w, "uid", dstMid)
	}
	if dstIP != nil {
		w.Token("ip", dstIP)
	}
	if portOK {
		w.Int("port", port)
	}
	if !dstMid.OK && dstIP == nil {
		w.Str("name", ocsfbase.Placeholder)
	}
	w.Close()
	if protoOK {
		w.Open("connection_info")
		w.Int("direction_id", 0) // required; the record does not say
		lower := r.LowerText(proto)
		w.StrBytes("protocol_name", lower)
		switch string(lower) {
		case "tcp":
			w.Int("protocol_num", 6)
		case "udp":
			w.Int("protocol_num", 17)
		case "icmp":
			w.Int("protocol_num", 1)
		}
		w.Close()
	}
	in, inOK := r.IntIn(cnSrcInBytes, r.Field(cnSrcInBytes))
	out, outOK := r.IntIn(cnSrcOutBytes, r.Field(cnSrcOutBytes))
	if inOK || outOK {
		// The source entity's counters: what it received came from the
		// destination (bytes_in), what it sent went there (bytes_out).
		w.Open("traffic")
		if inOK {
			w.Int("bytes_in", in)
			r.Mapped(cnSrcInBytes)
		}
		if outOK {
			w.Int("bytes_out", out)
			r.Mapped(cnSrcOutBytes)
		}
		if inOK && outOK && in >= 0 && out >= 0 && in <= 1<<62 && out <= 1<<62 {
			w.Int("bytes", in+out)
		}
		w.Close()
	}
	if pidOK {
		w.Open("actor")
		w.Open("process")
		w.Token("uid", pid)
		w.Close()
		w.Close()
	}
	if epWhole {
		r.Mapped(cnEndpoints)
	}
	if srcWhole {
		r.Mapped(cnSrcEntity)
	}
	if dstWhole {
		r.Mapped(cnDstEntity)
	}
}

// entity looks up mid and pid_hash in the entity id object of field i and
// reports whether it holds nothing else.
func entity(r *ocsfrec.Record, i int, vals [][]byte) bool {
	v := r.Field(i)
	if ocsfjson.IsNull(v) {
		return false
	}
	extra, ok := r.Lookup(v, []string{"mid", "pid_hash"}, vals)
	if !ok {
		r.Fallback(i)
	}
	return ok && extra == 0
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

func dnsHead(r *ocsfrec.Record, h *ocsfbase.Head) {
	h.Activity = 6 // Traffic: a summary holds the query and its answer
	h.Profiles = profileHost
}

func dnsBody(w *ocsfjson.Writer, r *ocsfrec.Record) {
	if mid := r.ID(dnMid); mid.OK {
		device(w, mid)
		r.Mapped(dnMid)
	}
	if tok, isStr, valid := r.HostnameIn(dnFqdn, r.Field(dnFqdn)); valid {
		w.Open("query")
		w.Token("hostname", tok)
		w.Close()
		r.Mapped(dnFqdn)
	} else if isStr {
		r.Fallback(dnFqdn) // not a hostname_t (e.g. a trailing dot)
	}
	if tok, ok := r.Str(dnHostIP); ok {
		w.OpenArray("answers")
		w.Open("")
		w.Token("rdata", tok)
		switch ocsfrec.IPVersion(r.Text(tok)) {
		case 4:
			w.Str("type", "A")
		case 6:
			w.Str("type", "AAAA")
		}
		if ttl, ok := r.Int32In(dnTTL, r.Field(dnTTL)); ok {
			w.Int("ttl", ttl)
			r.Mapped(dnTTL)
		}
		w.Close()
		w.CloseArray()
		r.Mapped(dnHostIP)
	}
	if ip, _ := r.IPIn(dnServer, r.Field(dnServer)); ip != nil {
		w.Open("dst_endpoint")
		w.Token("ip", ip)
		w.Close()
		r.Mapped(dnServer)
	}
}
