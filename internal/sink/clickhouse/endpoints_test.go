package clickhouse

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// Who talked to an address needs no JSON (issue 33 item 7): the
// connections table has src_ips and dst_ips, Array(IPv6), one element per
// element of the record's endpointDetails, IPv4 v4-mapped, an address that
// is none "::" so that both arrays stay aligned. A table of the previous
// schema, with rows, gets the columns at Start, and its rows read their
// addresses (computed from the record, then stored by the mutation); rows
// the sink inserts get them at insert. A search by address goes through
// the columns' bloom filters (the server refuses the query otherwise) and
// finds what a search of the JSON finds.
func TestConnectionsHoldTheEndpointIPsAsTypedColumns(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			srv.Exec(t, previousDDL(t, db, "connections"))
			const ts = `'2026-09-01 10:00:00', '2026-09-01 00:00:00', '2026-09-02 00:00:00', '2026-09-02 00:01:00'`
			srv.Exec(t, `INSERT INTO `+db+`.connections (id, account, time, window_start, window_end, fetched_at, record) VALUES
				('old1', 'acme', `+ts+`, '{"endpointDetails":[{"dst_ip_addr":"1.2.3.4","dst_port":443,"protocol":"TCP","src_ip_addr":"10.0.0.1"},{"dst_ip_addr":"2001:db8::5","src_ip_addr":"host.local"}]}'),
				('old2', 'acme', `+ts+`, '{"numConns":1}')`)

			s, _ := startSink(t, testConfig(srv, proto, db))

			if got := srv.Query(t, "SELECT name, type FROM system.columns WHERE database = '"+db+"' AND table = 'connections' AND name LIKE '%_ips' ORDER BY name"); got != "dst_ips\tArray(IPv6)\nsrc_ips\tArray(IPv6)" {
				t.Fatalf("columns after Start:\n%s", got)
			}
			wantOld := "old1\t['::ffff:10.0.0.1','::']\t['::ffff:1.2.3.4','2001:db8::5']\nold2\t[]\t[]"
			if got := srv.Query(t, "SELECT id, src_ips, dst_ips FROM "+db+".connections ORDER BY id"); got != wantOld {
				t.Errorf("rows stored before the columns:\n%s\nwant:\n%s", got, wantOld)
			}

			base := time.Date(2026, 9, 2, 0, 0, 0, 0, time.UTC)
			d := generate(t, "connections", 300, base)
			envs := d.envs
			for i, raw := range []string{
				`{"startTime":"2026-09-02T01:00:00.000Z","endpointDetails":[{"dst_ip_addr":"1.2.3.4","dst_port":53,"protocol":"UDP","src_ip_addr":"2001:db8::9"}]}`,
				`{"startTime":"2026-09-02T02:00:00.000Z","endpointDetails":[{"dst_ip_addr":"5.6.7.8","src_ip_addr":"1.2.3.4"},{"dst_ip_addr":"fe80::1%eth0","src_ip_addr":"1.2.3.4"}]}`,
				`{"startTime":"2026-09-02T03:00:00.000Z","endpointDetails":null}`,
			} {
				e := envelope(t, "connections", "acme", []byte(raw), base, base.Add(24*time.Hour), base.Add(25*time.Hour))
				e.ID = fmt.Sprintf("new%d", i+1) // readable in the expectations
				envs = append(envs, e)
			}
			writeAll(t, s, []*record.Batch{batchOf("connections", "acme", envs, 0)})

			q := "SELECT id, src_ips, dst_ips FROM " + db + ".connections WHERE id LIKE 'new%' ORDER BY id"
			wantNew := "new1\t['2001:db8::9']\t['::ffff:1.2.3.4']\n" +
				"new2\t['::ffff:1.2.3.4','::ffff:1.2.3.4']\t['::ffff:5.6.7.8','::']\n" +
				"new3\t[]\t[]"
			if got := srv.Query(t, q); got != wantNew {
				t.Errorf("rows the sink inserted:\n%s\nwant:\n%s", got, wantNew)
			}
			for _, c := range []struct{ col, want string }{{"dst_ips", "new1\nold1"}, {"src_ips", "new2"}} {
				got := srv.Query(t, "SELECT id FROM "+db+".connections FINAL WHERE has("+c.col+", toIPv6('1.2.3.4')) ORDER BY id SETTINGS force_data_skipping_indices = 'bf_"+c.col+"'")
				if got != c.want {
					t.Errorf("who has 1.2.3.4 in %s: %q, want %q", c.col, got, c.want)
				}
			}
			// The generated records: every address of their JSON is found
			// through the columns, and nothing else.
			for _, side := range []string{"src", "dst"} {
				typed := srv.Query(t, "SELECT arraySort(groupArray(toString(a))) FROM (SELECT arrayJoin("+side+"_ips) AS a FROM "+db+".connections FINAL WHERE startsWith(id, 'new') = 0 AND startsWith(id, 'old') = 0)")
				fromJSON := srv.Query(t, "SELECT arraySort(groupArray(toString(toIPv6(JSONExtractString(e, '"+side+"_ip_addr'))))) FROM (SELECT arrayJoin(JSONExtractArrayRaw(record, 'endpointDetails')) AS e FROM "+db+".connections FINAL WHERE startsWith(id, 'new') = 0 AND startsWith(id, 'old') = 0)")
				if typed != fromJSON || strings.Count(typed, ",") < 299 {
					t.Errorf("%s addresses of the generated records: columns\n%.300s\nJSON\n%.300s", side, typed, fromJSON)
				}
			}
		})
	}
}
