package clickhouse

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// Issue 24: the current fleet from agent_info, native IP and severity
// columns, and the in-place conversion of tables of the previous schema.

// The view agent_info_latest holds one row per agent (account and mid),
// with the status, version and every other column of its newest record,
// whatever the order in which the versions arrived; the table keeps every
// version.
func TestAgentInfoLatestHoldsTheNewestStateOfEachAgent(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	s, _ := startSink(t, testConfig(srv, ProtocolNative, db))
	g := newGen("agent_info", 5)
	ws := testBase
	fetched := testBase.Add(24 * time.Hour)
	at := func(h int) time.Time { return testBase.Add(time.Duration(h) * time.Hour) }
	env := func(account string, r genRecord, fetchedAt time.Time) record.Envelope {
		return envelope(t, "agent_info", account, r.raw, ws, ws.Add(24*time.Hour), fetchedAt)
	}
	const m1, m2, m3 = 101, 202, 303
	type version struct {
		h int
		r genRecord
	}
	newest := map[string]version{}
	v := func(account string, mid int64, h int, status, agentVersion string, fetchedAt time.Time) record.Envelope {
		r := g.agent(at(h), mid, status, agentVersion, at(h).Add(-time.Minute))
		key := fmt.Sprint(account, "/", mid)
		if old, ok := newest[key]; !ok || h > old.h {
			newest[key] = version{h, r}
		}
		return env(account, r, fetchedAt)
	}
	// Versions arrive out of order and in several Writes; mid 303 is seen
	// in two accounts, which stay two agents.
	batches := [][]record.Envelope{
		{v("acme", m1, 5, "INACTIVE", "6.3.1", fetched), v("acme", m2, 1, "ACTIVE", "6.2.0", fetched)},
		{v("acme", m1, 1, "ACTIVE", "6.2.0", fetched), v("acme", m1, 3, "ACTIVE", "6.3.0", fetched)},
		{v("acme", m2, 2, "ACTIVE", "6.3.1", fetched), v("acme", m3, 4, "ACTIVE", "6.3.1", fetched)},
		{v("acme-dev", m3, 6, "INACTIVE", "6.2.0", fetched), v("acme-dev", m3, 2, "ACTIVE", "6.2.0", fetched)},
	}
	for i, envs := range batches {
		writeAll(t, s, []*record.Batch{batchOf("agent_info", envs[0].Account, envs, i)})
	}
	got := srv.Query(t, "SELECT account, mid, status, agent_version, hostname, toString(ip_addr), toUnixTimestamp64Milli(time) FROM "+db+".agent_info_latest ORDER BY account, mid")
	var want []string
	for _, k := range []string{"acme/101", "acme/202", "acme/303", "acme-dev/303"} {
		n := newest[k]
		account, mid, _ := strings.Cut(k, "/")
		want = append(want, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t::ffff:%s\t%d", account, mid, n.r.want["status"], n.r.want["agent_version"],
			n.r.want["hostname"], n.r.want["ip_addr"], at(n.h).UnixMilli()))
	}
	if got != strings.Join(want, "\n") {
		t.Errorf("agent_info_latest:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if n := count(t, srv, db, "agent_info", "FINAL"); n != 8 {
		t.Errorf("agent_info keeps %d versions, want all 8", n)
	}
	// The query of docs/clickhouse.md: agents by status and version now.
	fleet := srv.Query(t, "SELECT status, agent_version, count() AS agents FROM "+db+".agent_info_latest GROUP BY status, agent_version ORDER BY status, agent_version")
	if fleet != "ACTIVE\t6.3.1\t2\nINACTIVE\t6.2.0\t1\nINACTIVE\t6.3.1\t1" {
		t.Errorf("agents by status and version now:\n%s", fleet)
	}
}

// previousDDL is the DDL of source's table as the previous version of the
// sink created it (schema/testdata/v2: IPs and severities as strings), in
// database db.
func previousDDL(t *testing.T, db, source string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("schema", "testdata", "v2", source+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "`svc`.", "`"+db+"`.")
}

// Tables of the previous schema, with rows, are converted by Start in
// place: the IP columns become Nullable(IPv6) and the severity
// Nullable(UInt8), every row stays with its raw record, a value that is no
// address or severity (an empty string, a host name) becomes NULL, CIDR
// queries work, and new rows go into the converted tables.
func TestStartConvertsTheStringIPAndSeverityColumnsOfThePreviousSchema(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			for _, src := range []string{"dns", "user_logins", "edge_audit_events", "edge_alerts", "agent_info"} {
				srv.Exec(t, previousDDL(t, db, src))
			}
			srv.Exec(t, previousDDL(t, db, "edge_alerts_latest"))
			const env = `(id, account, time, window_start, window_end, fetched_at, record`
			const ts = `'2026-09-01 10:00:00', '2026-09-01 00:00:00', '2026-09-02 00:00:00', '2026-09-02 00:01:00'`
			srv.Exec(t, `INSERT INTO `+db+`.dns `+env+`, fqdn, host_ip_addr) VALUES
				('d1', 'acme', `+ts+`, '{"hostIpAddr":"192.0.2.7"}', 'a.example', '192.0.2.7'),
				('d2', 'acme', `+ts+`, '{"hostIpAddr":"2001:db8::5"}', 'b.example', '2001:db8::5'),
				('d3', 'acme', `+ts+`, '{"hostIpAddr":"resolver.local"}', 'c.example', 'resolver.local'),
				('d4', 'acme', `+ts+`, '{}', 'd.example', '')`)
			srv.Exec(t, `INSERT INTO `+db+`.user_logins `+env+`, username, source_ip_addr) VALUES ('u1', 'acme', `+ts+`, '{}', 'alice', '198.51.100.9')`)
			srv.Exec(t, `INSERT INTO `+db+`.edge_audit_events `+env+`, user_login, client_ip) VALUES ('e1', 'acme', `+ts+`, '{}', 'bob', '203.0.113.1')`)
			srv.Exec(t, `INSERT INTO `+db+`.edge_alerts `+env+`, uuid, severity, status) VALUES
				('a1', 'acme', `+ts+`, '{"severity":4}', 'u-1', '4', 'OPEN'),
				('a2', 'acme', `+ts+`, '{}', 'u-2', '', 'OPEN'),
				('a3', 'acme', `+ts+`, '{"severity":"HIGH"}', 'u-3', 'HIGH', 'OPEN')`)
			srv.Exec(t, `INSERT INTO `+db+`.agent_info `+env+`, mid, status, agent_version) VALUES ('g1', 'acme', `+ts+`, '{"mid":9}', 9, 'ACTIVE', '6.2.0')`)

			s, _ := startSink(t, testConfig(srv, proto, db))

			types := srv.Query(t, "SELECT table, name, type FROM system.columns WHERE database = '"+db+"' AND name IN ('host_ip_addr', 'source_ip_addr', 'client_ip', 'ip_addr', 'severity') AND table NOT LIKE '%latest' ORDER BY table, name")
			wantTypes := strings.Join([]string{
				"agent_info\tip_addr\tNullable(IPv6)",
				"dns\thost_ip_addr\tNullable(IPv6)",
				"edge_alerts\tseverity\tNullable(UInt8)",
				"edge_audit_events\tclient_ip\tNullable(IPv6)",
				"user_logins\tsource_ip_addr\tNullable(IPv6)",
			}, "\n")
			if types != wantTypes {
				t.Errorf("column types after Start:\n%s\nwant:\n%s", types, wantTypes)
			}
			if got := srv.Query(t, "SELECT id, fqdn, toString(host_ip_addr), record FROM "+db+".dns ORDER BY id"); got != strings.Join([]string{
				"d1\ta.example\t::ffff:192.0.2.7\t{\"hostIpAddr\":\"192.0.2.7\"}",
				"d2\tb.example\t2001:db8::5\t{\"hostIpAddr\":\"2001:db8::5\"}",
				"d3\tc.example\t\\N\t{\"hostIpAddr\":\"resolver.local\"}",
				"d4\td.example\t\\N\t{}",
			}, "\n") {
				t.Errorf("dns rows after the conversion:\n%s", got)
			}
			if got := srv.Query(t, "SELECT id, severity FROM "+db+".edge_alerts ORDER BY id"); got != "a1\t4\na2\t\\N\na3\t\\N" {
				t.Errorf("edge_alerts rows after the conversion:\n%s", got)
			}
			for table, n := range map[string]int64{"user_logins": 1, "edge_audit_events": 1, "agent_info": 1} {
				if got := count(t, srv, db, table, ""); got != n {
					t.Errorf("%s: %d rows after the conversion, want %d", table, got, n)
				}
			}
			// CIDR queries on the native column.
			if got := srv.Query(t, "SELECT groupArray(id) FROM (SELECT id FROM "+db+".dns WHERE host_ip_addr BETWEEN IPv4CIDRToRange(toIPv4('192.0.2.0'), 24).1 AND IPv4CIDRToRange(toIPv4('192.0.2.0'), 24).2 ORDER BY id)"); got != "['d1']" {
				t.Errorf("IPv4CIDRToRange over host_ip_addr: %s", got)
			}
			if got := srv.Query(t, "SELECT groupArray(id) FROM (SELECT id FROM "+db+".dns WHERE isIPAddressInRange(toString(host_ip_addr), '2001:db8::/32') ORDER BY id)"); got != "['d2']" {
				t.Errorf("isIPAddressInRange over host_ip_addr: %s", got)
			}
			if got := srv.Query(t, "SELECT count() FROM "+db+".user_logins WHERE isIPAddressInRange(toString(source_ip_addr), '::ffff:198.51.100.0/120')"); got != "1" {
				t.Errorf("isIPAddressInRange with a v4-mapped range over source_ip_addr: %s", got)
			}
			// New rows go into the converted tables.
			for _, src := range []string{"dns", "edge_alerts", "user_logins", "edge_audit_events", "agent_info"} {
				d := generate(t, src, 20, testBase)
				writeAll(t, s, []*record.Batch{batchOf(src, "acme", d.envs, 0)})
				rows := readTable(t, openConn(t, srv.Native), db, src)
				for id, w := range d.want {
					for col, v := range w.want {
						if gt, ok := v.(time.Time); ok {
							if !rows[id].typed[col].(time.Time).Equal(gt) {
								t.Errorf("%s %s: %s = %v, want %v", src, id, col, rows[id].typed[col], v)
							}
							continue
						}
						if rows[id].typed[col] != v {
							t.Errorf("%s %s: %s = %#v, want %#v", src, id, col, rows[id].typed[col], v)
						}
					}
				}
			}
			if got := srv.Query(t, "SELECT severity FROM "+db+".edge_alerts_latest WHERE uuid = 'u-1'"); got != "4" {
				t.Errorf("edge_alerts_latest over the converted table: severity %q", got)
			}
		})
	}
}

// A record whose IP member is no address (a host name, an address with a
// zone or a port, a number, an empty string) or whose severity is out of
// range is stored whole with NULL in the typed column: the insert does not
// fail and no record is lost.
func TestAnInvalidIPOrSeverityNeitherFailsTheInsertNorLosesTheRecord(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			s, _ := startSink(t, testConfig(srv, proto, db))
			ws := testBase
			ms := ws.Add(time.Hour).UnixMilli()
			ips := []string{`"999.1.1.1"`, `"host.example"`, `"fe80::1%eth0"`, `"192.0.2.1:443"`, `""`, `3232235777`, `"192.0.2.1"`, `"2001:db8::1"`}
			var envs []record.Envelope
			for i, ip := range ips {
				raw := fmt.Sprintf(`{"create_time":%d,"client_ip":%s,"user_login":"u%d"}`, ms, ip, i)
				envs = append(envs, envelope(t, "edge_audit_events", "acme", []byte(raw), ws, ws.Add(24*time.Hour), ws.Add(25*time.Hour)))
			}
			writeAll(t, s, []*record.Batch{batchOf("edge_audit_events", "acme", envs, 0)})
			got := srv.Query(t, "SELECT user_login, toString(client_ip), JSONExtractRaw(record, 'client_ip') FROM "+db+".edge_audit_events ORDER BY user_login")
			var want []string
			for i, ip := range ips {
				typed := `\N`
				switch i {
				case 6:
					typed = "::ffff:192.0.2.1"
				case 7:
					typed = "2001:db8::1"
				}
				want = append(want, fmt.Sprintf("u%d\t%s\t%s", i, typed, ip))
			}
			if got != strings.Join(want, "\n") {
				t.Errorf("edge_audit_events:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}

			var alerts []record.Envelope
			for i, sev := range []string{`256`, `-1`, `"HIGH"`, `2.5`, `null`, `"3"`, `5`} {
				raw := fmt.Sprintf(`{"create_time":%d,"uuid":"u%d","severity":%s,"update_time":%d}`, ms, i, sev, ms)
				alerts = append(alerts, envelope(t, "edge_alerts", "acme", []byte(raw), ws, ws.Add(24*time.Hour), ws.Add(25*time.Hour)))
			}
			writeAll(t, s, []*record.Batch{batchOf("edge_alerts", "acme", alerts, 0)})
			if got := srv.Query(t, "SELECT groupArray(ifNull(toString(severity), 'NULL')) FROM (SELECT uuid, severity FROM "+db+".edge_alerts ORDER BY uuid)"); got != "['NULL','NULL','NULL','NULL','NULL','3','5']" {
				t.Errorf("severities: %s", got)
			}
		})
	}
}
