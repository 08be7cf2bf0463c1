package clickhouse

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
)

// This file generates records shaped like the seed's tables ("Activity
// records", "Edge resources"), with the typed values each should give.

// timeFields are the record time members (CONTRACT C3, C6).
func timeFields() map[string]string {
	return map[string]string{
		"changed_files": "startTime", "connections": "startTime", "dns": "createdTime",
		"user_logins": "createdTime", "agent_info": "createdTime", "audit_logs": "createdTime",
		"cloud_activities": "startTime", "edge_audit_events": "create_time", "edge_alerts": "create_time",
	}
}

// member is one member of a generated record, in order.
type member struct {
	name  string
	value any // rendered with encoding/json unless it is json.RawMessage
}

func render(ms []member) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.value)
		if err != nil {
			panic(err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// genRecord is a generated record and the typed values it must give.
type genRecord struct {
	raw  []byte
	want map[string]any // column -> string, int64, time.Time, netip.Addr, uint8 or nil (NULL)
}

// gen makes records of one source deterministically from seed.
type gen struct {
	r      *rand.Rand
	source string
}

func newGen(source string, seed uint64) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, uint64(len(source)))), source: source}
}

func (g *gen) pick(ss ...string) string { return ss[g.r.IntN(len(ss))] }
func (g *gen) ip() string {
	return fmt.Sprintf("10.%d.%d.%d", g.r.IntN(256), g.r.IntN(256), g.r.IntN(256))
}
func (g *gen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.r.IntN(16)]
	}
	return string(b)
}
func iso(t time.Time) string    { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
func isoOff(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05-0700") } // +0000 (C3)

// record makes one record with record time t.
func (g *gen) record(t time.Time) genRecord {
	end := t.Add(time.Duration(g.r.IntN(3600)) * time.Second)
	mid := int64(g.r.IntN(1 << 40))
	switch g.source {
	case "changed_files":
		path := g.pick("/usr/bin/", "/etc/", "/home/ü-user/", `C:\Users\"quoted"\`) + g.hex(8) + "\t.bin"
		hash, size := g.hex(64), int64(g.r.IntN(1<<30))
		return genRecord{raw: render([]member{
			{"startTime", iso(t)}, {"endTime", iso(end)}, {"mid", mid}, {"filePath", path},
			{"filedataHash", hash}, {"mtime", iso(t.Add(-time.Hour))}, {"size", size},
			{"threatInfo", []any{map[string]any{"score": 3, "tags": []string{"x"}}}},
		}), want: map[string]any{"mid": mid, "file_path": path, "filedata_hash": hash, "size": size}}
	case "connections":
		src, dst := int64(g.r.IntN(1<<40)), int64(g.r.IntN(1<<40))
		si, so, di, do := int64(g.r.IntN(1e9)), int64(g.r.IntN(1e9)), int64(g.r.IntN(1e9)), int64(g.r.IntN(1e9))
		n := int64(1 + g.r.IntN(50))
		return genRecord{raw: render([]member{
			{"dstEntityId", map[string]any{"mid": dst, "pid_hash": g.hex(16)}}, {"dstEntityType", "Process"},
			{"dstInBytes", di}, {"dstOutBytes", do},
			{"endpointDetails", []map[string]any{{"dst_ip_addr": g.ip(), "dst_port": 443, "protocol": "TCP", "src_ip_addr": g.ip()}}},
			{"startTime", iso(t)}, {"endTime", iso(end)}, {"numConns", n},
			{"srcEntityId", map[string]any{"pid_hash": g.hex(16), "mid": src}}, {"srcEntityType", "Process"},
			{"srcInBytes", si}, {"srcOutBytes", so},
		}), want: map[string]any{"src_mid": src, "dst_mid": dst, "src_in_bytes": si, "src_out_bytes": so,
			"dst_in_bytes": di, "dst_out_bytes": do, "num_conns": n}}
	case "dns":
		fqdn := g.pick("api", "www", "mail", "cdn") + "." + g.hex(6) + ".example.com"
		ip := g.ip()
		return genRecord{raw: render([]member{
			{"createdTime", iso(t)}, {"mid", mid}, {"fqdn", fqdn}, {"hostIpAddr", ip},
			{"ttl", 300}, {"dnsServerIp", g.ip()},
		}), want: map[string]any{"mid": mid, "fqdn": fqdn, "host_ip_addr": netip.MustParseAddr(ip)}}
	case "user_logins":
		user, act, ip := g.pick("alice", "bob", "root", "svc-deploy"), g.pick("LOGIN", "LOGOFF"), g.ip()
		return genRecord{raw: render([]member{
			{"createdTime", iso(t)}, {"mid", mid}, {"activityTime", iso(t)}, {"activityType", act},
			{"username", user}, {"uid", 1000 + g.r.IntN(100)}, {"sourceIpAddr", ip},
		}), want: map[string]any{"mid": mid, "username": user, "activity_type": act, "source_ip_addr": netip.MustParseAddr(ip)}}
	case "agent_info":
		return g.agent(t, mid, g.pick("ACTIVE", "INACTIVE"), g.pick("6.2.0", "6.3.1"), end)
	case "cloud_activities":
		et, model, id := g.pick("CreateUser", "DeleteBucket", "AssumeRole"), g.pick("CloudTrailCep", "AuditLog"), int64(g.r.IntN(1<<50))
		return genRecord{raw: render([]member{
			{"startTime", iso(t)}, {"endTime", iso(end)}, {"eventType", et}, {"eventId", id},
			{"eventModel", model}, {"eventActor", "arn:provA:iam::123:user/" + g.hex(4)},
			{"eventMap", map[string]any{"API": []map[string]any{{"KEY": map[string]string{"api": et}, "PROPS": map[string]any{}}},
				"Region": []map[string]any{{"KEY": map[string]string{"region": "eu-west-1"}, "PROPS": nil}}}},
		}), want: map[string]any{"event_type": et, "event_model": model, "event_id": id}}
	case "audit_logs":
		acct, user, ev, act := "ACME", g.pick("alice@example.com", "bob@example.com"), g.pick("Login", "Create Alert Rule"), g.pick("Login", "Create", "Delete")
		return genRecord{raw: render([]member{
			{"accountName", acct}, {"createdTime", isoOff(t)}, {"eventDescription", "user did " + ev},
			{"eventName", ev}, {"userAction", act}, {"userName", user},
		}), want: map[string]any{"account_name": acct, "user_name": user, "event_name": ev, "user_action": act}}
	case "edge_audit_events":
		method, path, status, login, ip := g.pick("GET", "POST", "DELETE"), "/api/v1/"+g.pick("apps", "users")+"/"+g.hex(8), int64(g.pick2(200, 403, 500)), g.pick("alice", "bob")+"@example.com", g.ip()
		return genRecord{raw: render([]member{
			{"account_name", "acme"}, {"auth_role", "admin"}, {"auth_uuid", g.hex(32)}, {"client_ip", ip},
			{"create_time", t.UnixMilli()}, {"method", method}, {"op", "read"}, {"path", path},
			{"request_body", `{"a":1}`}, {"response_status", status}, {"response_status_text", "x"},
			{"user_login", login}, {"uuid", g.hex(32)},
		}), want: map[string]any{"method": method, "path": path, "response_status": status, "user_login": login, "client_ip": netip.MustParseAddr(ip)}}
	case "edge_alerts":
		return g.alert(t, g.hex(32), t.Add(time.Minute), g.pick("OPEN", "IN_PROGRESS", "CLOSED"))
	}
	panic("unknown source " + g.source)
}

func (g *gen) pick2(ns ...int) int { return ns[g.r.IntN(len(ns))] }

// agent makes one agent_info record of agent mid taken at t.
func (g *gen) agent(t time.Time, mid int64, status, version string, lastUpdate time.Time) genRecord {
	ip := g.ip()
	host, osName := "ip-"+strings.ReplaceAll(ip, ".", "-"), g.pick("Linux", "Windows")
	return genRecord{raw: render([]member{
		{"agentVersion", version}, {"createdTime", iso(t)}, {"hostname", host}, {"ipAddr", ip},
		{"lastUpdate", iso(lastUpdate)}, {"mid", mid}, {"mode", g.pick("normal", "ebpf")}, {"os", osName},
		{"status", status}, {"tags", map[string]string{"env": g.pick("prod", "dev"), "team": "core"}},
	}), want: map[string]any{"mid": mid, "hostname": host, "os": osName, "status": status, "agent_version": version,
		"ip_addr": netip.MustParseAddr(ip), "last_update": lastUpdate.UTC().Truncate(time.Millisecond)}}
}

// alert makes one version of the edge alert uuid.
func (g *gen) alert(created time.Time, uuid string, updated time.Time, status string) genRecord {
	sev, inc, et := uint8(1+g.r.IntN(5)), g.pick("UNKNOWN", "TRUE_POSITIVE"), g.pick("DLP", "MALWARE")
	return genRecord{raw: render([]member{
		{"account_name", "acme"}, {"create_time", created.UnixMilli()}, {"description", "alert " + uuid[:4]},
		{"event_type", et}, {"incident_status", inc}, {"owner_uuid", g.hex(32)},
		{"related_entities", map[string]int{"devices_count": 1, "users_count": 2}},
		{"severity", sev}, {"status", status}, {"update_time", updated.UnixMilli()}, {"uuid", uuid},
	}), want: map[string]any{"uuid": uuid, "severity": sev, "status": status, "incident_status": inc,
		"event_type": et, "update_time": updated.UTC().Truncate(time.Millisecond)}}
}

// envelope builds the envelope of raw as the pipeline would (C7 id).
func envelope(t testing.TB, source, account string, raw []byte, ws, we, fetched time.Time) record.Envelope {
	t.Helper()
	var b record.Builder
	e, flaw := b.Build(source, account, timeFields()[source], ws, we, fetched, raw)
	if flaw != 0 {
		t.Fatalf("envelope of %s record %s: %v", source, raw, flaw)
	}
	return e
}

// oddRecords are records whose typed members are missing or of another
// type: every typed column must hold its default. Each has the record time
// member, or it would not be a record at all.
func oddRecords(source string, t time.Time) [][]byte {
	tf := timeFields()[source]
	var tv any = iso(t)
	if strings.HasPrefix(source, "edge_") {
		tv = t.UnixMilli()
	}
	var spec schema.Table
	for _, s := range schema.Tables() {
		if s.Source == source {
			spec = s
		}
	}
	missing := render([]member{{tf, tv}, {"unrelated", map[string]any{"mid": 7}}})
	var odd []member
	odd = append(odd, member{tf, tv})
	seen := map[string]bool{}
	for _, f := range spec.Fields {
		var v any
		switch f.Kind {
		case schema.KindString:
			v = map[string]any{"nested": "object"} // objects are no string
		case schema.KindInt64:
			v = "12345" // numbers sent as strings
		case schema.KindTime:
			v = []int{1, 2}
		case schema.KindIP:
			v = "not an address"
		case schema.KindUInt8:
			v = "HIGH"
		}
		if len(f.Path) == 2 {
			if seen[f.Path[0]] {
				continue
			}
			seen[f.Path[0]] = true
			v = "not an object"
		}
		odd = append(odd, member{f.Path[0], v})
	}
	nulls := []member{{tf, tv}}
	for _, f := range spec.Fields {
		nulls = append(nulls, member{f.Path[0], nil})
	}
	return [][]byte{missing, render(odd), render(nulls)}
}

// defaults are the typed values of a record that has none of them.
func defaults(source string) map[string]any {
	out := map[string]any{}
	for _, s := range schema.Tables() {
		if s.Source != source {
			continue
		}
		for _, f := range s.Fields {
			switch f.Kind {
			case schema.KindString:
				out[f.Column] = ""
			case schema.KindInt64:
				out[f.Column] = int64(0)
			case schema.KindTime:
				out[f.Column] = time.Unix(0, 0).UTC()
			case schema.KindIP, schema.KindUInt8:
				out[f.Column] = nil // NULL
			}
		}
	}
	return out
}
