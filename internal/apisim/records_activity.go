package apisim

import "strconv"

// Records of the four activity searches, field for field as the seed's
// "Activity records" table lists them.

// genChangedFile: startTime, endTime, mid (int), filePath, filedataHash,
// mtime (string), size (int), threatInfo.
func genChangedFile(r *rec, x *rnd, st *stream, t int64) {
	r.time("startTime", t)
	r.time("endTime", t+int64(x.n(300000)))
	r.int("mid", machine(x))
	r.str("filePath", filePaths[x.n(len(filePaths))])
	a := r.mark()
	r.arena = appendHex(r.arena, x.next(), 16)
	r.arena = appendHex(r.arena, x.next(), 16)
	r.arena = appendHex(r.arena, x.next(), 16)
	r.arena = appendHex(r.arena, x.next(), 16)
	r.strFrom("filedataHash", a)
	a = r.mark()
	r.arena = strconv.AppendInt(r.arena, t/1000-int64(x.n(30*86400)), 10)
	r.strFrom("mtime", a)
	r.int("size", int64(x.next()>>40))
	if x.n(100) < 85 {
		r.null("threatInfo")
	} else {
		r.beginObj("threatInfo")
		r.str("threatSeverity", [...]string{"LOW", "MEDIUM", "HIGH", "CRITICAL"}[x.n(4)])
		r.beginArr("threatTags")
		r.str("", [...]string{"malware", "trojan", "miner", "webshell"}[x.n(4)])
		r.str("", "reported")
		r.end()
		r.str("threatSource", "Überwachung Labs")
		r.end()
	}
}

func entityID(r *rec, x *rnd, key string) {
	r.beginObj(key)
	r.int("mid", machine(x))
	a := r.mark()
	r.arena = append(r.arena, "0x"...)
	r.arena = appendHex(r.arena, x.next(), 16)
	r.strFrom("pid_hash", a)
	r.end()
}

// genConnection: dstEntityId{mid,pid_hash}, dstEntityType, dstInBytes,
// dstOutBytes, endpointDetails[{dst_ip_addr,dst_port,protocol,src_ip_addr}],
// startTime, endTime, numConns, srcEntityId, srcEntityType, srcInBytes,
// srcOutBytes.
func genConnection(r *rec, x *rnd, st *stream, t int64) {
	entityID(r, x, "dstEntityId")
	r.str("dstEntityType", entityTypes[x.n(len(entityTypes))])
	r.int("dstInBytes", int64(x.next()>>44))
	r.int("dstOutBytes", int64(x.next()>>44))
	r.beginArr("endpointDetails")
	for k, n := 0, 1+x.n(3); k < n; k++ {
		r.beginObj("")
		a := r.mark()
		r.arena = appendPublicIP(r.arena, x.next())
		r.strFrom("dst_ip_addr", a)
		r.int("dst_port", ports[x.n(len(ports))])
		r.str("protocol", protocols[x.n(2)])
		a = r.mark()
		r.arena = appendMachineIP(r.arena, machine(x))
		r.strFrom("src_ip_addr", a)
		r.end()
	}
	r.end()
	r.time("startTime", t)
	r.time("endTime", t+int64(x.n(3600000)))
	r.int("numConns", 1+int64(x.n(500)))
	entityID(r, x, "srcEntityId")
	r.str("srcEntityType", "Process")
	r.int("srcInBytes", int64(x.next()>>44))
	r.int("srcOutBytes", int64(x.next()>>44))
}

// genDNS: createdTime, mid, fqdn, hostIpAddr, ttl (int), dnsServerIp.
func genDNS(r *rec, x *rnd, st *stream, t int64) {
	r.time("createdTime", t)
	mid := machine(x)
	r.int("mid", mid)
	r.str("fqdn", fqdns[x.n(len(fqdns))])
	a := r.mark()
	r.arena = appendPublicIP(r.arena, x.next())
	r.strFrom("hostIpAddr", a)
	r.int("ttl", [...]int64{30, 60, 300, 3600, 86400}[x.n(5)])
	r.str("dnsServerIp", [...]string{"10.0.0.2", "1.1.1.1", "8.8.8.8"}[x.n(3)])
}

// genUserLogin: createdTime, mid, activityTime, activityType (LOGIN or
// LOGOFF), username, uid (int), sourceIpAddr.
func genUserLogin(r *rec, x *rnd, st *stream, t int64) {
	r.time("createdTime", t)
	r.int("mid", machine(x))
	r.time("activityTime", t-int64(x.n(120000)))
	r.str("activityType", [...]string{"LOGIN", "LOGOFF"}[x.n(2)])
	u := x.n(len(userNames))
	r.str("username", userNames[u])
	r.int("uid", int64(1000+u))
	a := r.mark()
	r.arena = appendPublicIP(r.arena, x.next())
	r.strFrom("sourceIpAddr", a)
}
