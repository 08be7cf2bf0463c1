package ocsf

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
