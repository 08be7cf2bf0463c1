package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// This file holds what the ClickHouse end-to-end tests share: the sink's
// configuration, reading the tables back, checking every row against its
// raw record, a proxy that cuts connections after an insert's data went
// through, and CPU time of a process.

// chTimeField is the record time member of each source (CONTRACT C3,
// C6).
var chTimeField = map[string]string{
	"changed_files": "startTime", "connections": "startTime", "dns": "createdTime",
	"user_logins": "createdTime", "agent_info": "createdTime", "audit_logs": "createdTime",
	"cloud_activities": "startTime", "edge_audit_events": "create_time", "edge_alerts": "create_time",
}

// Kinds of typed columns, as the sink documents them (doc.go): a string
// column takes a JSON string or the literal text of a number or boolean; an
// Int64 column a JSON integer; a time column what record.ParseTime reads.
// Anything else leaves the column's default.
const (
	chString = iota
	chInt
	chTime
)

type chTypedCol struct {
	name string
	path []string // record member, or object member and the name inside
	kind int
}

func chCol(name, path string, kind int) chTypedCol {
	return chTypedCol{name: name, path: strings.Split(path, "."), kind: kind}
}

// chTypedColumns are the typed columns of each table with the record member
// they must hold, written down here from the seed's record tables
// independently of the sink's schema.go, so that a wrong mapping there
// fails this test.
var chTypedColumns = map[string][]chTypedCol{
	"changed_files": {chCol("mid", "mid", chInt), chCol("file_path", "filePath", chString), chCol("filedata_hash", "filedataHash", chString), chCol("size", "size", chInt)},
	"connections": {chCol("src_mid", "srcEntityId.mid", chInt), chCol("dst_mid", "dstEntityId.mid", chInt),
		chCol("src_in_bytes", "srcInBytes", chInt), chCol("src_out_bytes", "srcOutBytes", chInt),
		chCol("dst_in_bytes", "dstInBytes", chInt), chCol("dst_out_bytes", "dstOutBytes", chInt), chCol("num_conns", "numConns", chInt)},
	"dns":              {chCol("mid", "mid", chInt), chCol("fqdn", "fqdn", chString), chCol("host_ip_addr", "hostIpAddr", chString)},
	"user_logins":      {chCol("mid", "mid", chInt), chCol("username", "username", chString), chCol("activity_type", "activityType", chString), chCol("source_ip_addr", "sourceIpAddr", chString)},
	"cloud_activities": {chCol("event_type", "eventType", chString), chCol("event_model", "eventModel", chString), chCol("event_id", "eventId", chInt)},
	"audit_logs": {chCol("account_name", "accountName", chString), chCol("user_name", "userName", chString),
		chCol("event_name", "eventName", chString), chCol("user_action", "userAction", chString)},
	"agent_info": {chCol("mid", "mid", chInt), chCol("hostname", "hostname", chString), chCol("os", "os", chString),
		chCol("status", "status", chString), chCol("agent_version", "agentVersion", chString)},
	"edge_audit_events": {chCol("method", "method", chString), chCol("path", "path", chString), chCol("response_status", "response_status", chInt),
		chCol("user_login", "user_login", chString), chCol("client_ip", "client_ip", chString)},
	"edge_alerts": {chCol("uuid", "uuid", chString), chCol("severity", "severity", chString), chCol("status", "status", chString),
		chCol("incident_status", "incident_status", chString), chCol("event_type", "event_type", chString), chCol("update_time", "update_time", chTime)},
}

// chServer is the test binary's ClickHouse server (chtest.Get).
func chServer(t *testing.T) *chtest.Server {
	t.Helper()
	return chtest.Get(t)
}

// chAddr is the server's address for protocol proto.
func chAddr(srv *chtest.Server, proto string) string {
	if proto == "http" {
		return srv.HTTP
	}
	return srv.Native
}

// chSinkYAML is the sink and pipeline configuration of the ClickHouse
// tests: 16 sink workers and a 100,000-record buffer, as
// configs/clickhouse.yaml has them, so that inserts gather many pages.
func chSinkYAML(addr, proto, db string, chKeys ...string) string {
	var more string
	for _, k := range chKeys {
		more += "    " + k + "\n"
	}
	return fmt.Sprintf(`sink:
  type: clickhouse
  clickhouse:
    addr: [%s]
    protocol: %s
    database: %s
%spipeline:
  sink_workers: 16
  buffer_records: 100000
`, addr, proto, db, more)
}

// chSourcesYAML enables only srcs, backfilled from start.
func chSourcesYAML(start time.Time, srcs ...string) string {
	s := fmt.Sprintf("sources:\n  default:\n    enabled: false\n    start: %s\n    lag: 2m\n    interval: 1s\n", start.Format(time.RFC3339))
	for _, src := range srcs {
		s += "  " + src + ": {enabled: true}\n"
	}
	return s
}

func chStreams(srcs ...string) []streamKey {
	var out []streamKey
	for _, s := range srcs {
		for _, a := range accounts {
			out = append(out, streamKey{s, a})
		}
	}
	return out
}

// openCH opens a native connection for reading the tables back.
func openCH(t testing.TB, srv *chtest.Server) driver.Conn {
	t.Helper()
	conn, err := ch.Open(&ch.Options{
		Addr:        []string{srv.Native},
		Protocol:    ch.Native,
		DialTimeout: 10 * time.Second,
		ReadTimeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// chVerifyOpts tunes verifyCH.
type chVerifyOpts struct {
	// from is where the backfill started; wms are the committed watermarks.
	from time.Time
	wms  map[streamKey]checkpoint.State
	// streams are compared with /_truth; rows of other streams are errors.
	streams []streamKey
	// skip names rows the test put there itself (older schema rows).
	skip map[string]bool
	// fetchedFrom and fetchedTo bound fetched_at (zero: unchecked).
	fetchedFrom, fetchedTo time.Time
	// sample: one row in sample (a power of two up to 256; 0 means 32) is
	// read back and checked against its raw record.
	sample int
	// exactRows asks that count() without FINAL equal the distinct ids:
	// nothing was stored twice, not even before a merge.
	exactRows bool
}

// chVerifyResult is what verifyCH found.
type chVerifyResult struct {
	distinct int64          // records compared with truth
	rows     int64          // rows stored (without FINAL)
	uniq     int64          // distinct ids stored
	typed    map[string]int // rows checked one by one, per table
}

// verifyCH checks the tables of the streams' sources in db:
//   - per (source, account, UTC day) of [from, watermark), the distinct
//     ids have the count and XOR of /_truth (C8); the digests are computed
//     by the server (groupBitXor over the ids as UInt256) so that hundreds
//     of thousands of rows need not travel into a race-instrumented test;
//   - count() FINAL equals the distinct ids (and, with exactRows, so does
//     count() without FINAL); an id never has two accounts or times; no
//     row belongs to a stream the run does not collect;
//   - for a sample of rows read back whole: the id is the C7 id of the raw
//     record (record.ID, and record.Canonical hashes to it and is a fixed
//     point); time is the record time read from the raw record (to the ms,
//     by the collector's reading and by encoding/json), inside
//     [window_start, window_end); fetched_at is after window_end (and
//     inside the run); every typed column holds what the raw record says.
func verifyCH(t *testing.T, srv *chtest.Server, conn driver.Conn, sim *apisim.Server, db string, o chVerifyOpts) chVerifyResult {
	t.Helper()
	if o.sample < 1 {
		o.sample = 32
	}
	res := chVerifyResult{typed: map[string]int{}}
	want := map[streamKey]bool{}
	var srcs []string
	byAcct := map[string][]string{}
	for _, k := range o.streams {
		want[k] = true
		if len(byAcct[k.source]) == 0 {
			srcs = append(srcs, k.source)
		}
		byAcct[k.source] = append(byAcct[k.source], k.account)
	}
	notOurs := "1"
	if len(o.skip) > 0 {
		notOurs = "id NOT IN (" + chQuoteList(o.skip) + ")"
	}
	for _, src := range srcs {
		table := db + "." + src
		// Digests per account and day, over distinct ids, below each
		// stream's watermark (rounded up to the ms: times are ms).
		var conds []string
		for _, a := range byAcct[src] {
			st, ok := o.wms[streamKey{src, a}]
			if !ok || !st.Watermark.After(o.from) {
				t.Errorf("%s/%s: no watermark past the start %v (%+v)", src, a, o.from, st)
				continue
			}
			conds = append(conds, fmt.Sprintf("(account = '%s' AND time < fromUnixTimestamp64Milli(toInt64(%d)))", a, chCeilMilli(st.Watermark)))
		}
		if len(conds) == 0 {
			continue
		}
		got := map[string]record.Digest{}
		q := fmt.Sprintf(`SELECT account, toString(toDate(time)), count(),
			lower(hex(reinterpretAsFixedString(groupBitXor(reinterpretAsUInt256(unhex(id))))))
			FROM (SELECT id, any(account) AS account, any(time) AS time FROM %s WHERE %s GROUP BY id)
			WHERE time >= fromUnixTimestamp64Milli(toInt64(%d)) AND (%s)
			GROUP BY 1, 2 FORMAT TSVRaw`, table, notOurs, chCeilMilli(o.from), strings.Join(conds, " OR "))
		for _, line := range strings.Split(srv.Query(t, q), "\n") {
			f := strings.Split(line, "\t")
			if len(f) != 4 {
				continue
			}
			var d record.Digest
			fmt.Sscan(f[2], &d.Count)
			x := f[3] + strings.Repeat("0", 64-len(f[3])) // trailing zero bytes may be dropped
			if _, err := hex.Decode(d.Xor[:], []byte(x)); err != nil {
				t.Fatalf("xor %q: %v", f[3], err)
			}
			got[f[0]+"/"+f[1]] = d
		}
		for _, a := range byAcct[src] {
			st := o.wms[streamKey{src, a}]
			end := st.Watermark
			for d := o.from.UTC().Truncate(24 * time.Hour); d.Before(end); d = d.Add(24 * time.Hour) {
				lo, hi := maxTime(d, o.from), minTime(d.Add(24*time.Hour), end)
				wantN, wantX := sim.Truth(src, a, lo, hi)
				g := got[a+"/"+d.Format("2006-01-02")]
				if g.Count != wantN || g.Hex() != wantX {
					t.Errorf("%s/%s day %s [%s, %s): the table holds %d distinct records (xor %.12s), truth %d (xor %.12s)",
						src, a, d.Format("2006-01-02"), lo.Format(time.RFC3339), hi.Format(time.RFC3339), g.Count, g.Hex(), wantN, wantX)
				}
				res.distinct += g.Count
			}
		}

		counts := strings.Fields(srv.Query(t, fmt.Sprintf(`SELECT
			(SELECT count() FROM %[1]s WHERE %[2]s),
			(SELECT count() FROM %[1]s FINAL WHERE %[2]s),
			(SELECT uniqExact(id) FROM %[1]s WHERE %[2]s),
			(SELECT count() FROM (SELECT id FROM %[1]s GROUP BY id HAVING uniqExact(account, time) > 1))`, table, notOurs)))
		var rows, final, uniq, mixed int64
		fmt.Sscan(strings.Join(counts, " "), &rows, &final, &uniq, &mixed)
		res.rows += rows
		res.uniq += uniq
		if final != uniq || mixed != 0 {
			t.Errorf("%s: count() FINAL = %d, uniqExact(id) = %d; %d ids with more than one account or time", src, final, uniq, mixed)
		}
		if o.exactRows && rows != uniq {
			t.Errorf("%s: %d rows stored (without FINAL) for %d distinct ids: something was stored twice", src, rows, uniq)
		}
		for _, a := range strings.Fields(srv.Query(t, fmt.Sprintf("SELECT DISTINCT account FROM %s WHERE %s", table, notOurs))) {
			if !want[streamKey{src, a}] {
				t.Errorf("%s: rows of account %q, which this run does not collect", src, a)
			}
		}
		res.typed[src] = chCheckRows(t, conn, table, src, o, notOurs)
		if res.typed[src] == 0 && rows > 0 {
			t.Errorf("%s: no row sampled", src)
		}
	}
	return res
}

// chCeilMilli is t in Unix ms, rounded up.
func chCeilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}

func chQuoteList(set map[string]bool) string {
	var q []string
	for s := range set {
		q = append(q, "'"+s+"'")
	}
	return strings.Join(q, ",")
}

// chCheckRows reads the sampled rows of one table whole and checks each
// against its raw record; it returns how many it checked.
func chCheckRows(t *testing.T, conn driver.Conn, table, src string, o chVerifyOpts, notOurs string) int {
	t.Helper()
	cols := chTypedColumns[src]
	names := []string{"id", "account", "time", "window_start", "window_end", "fetched_at", "record"}
	for _, c := range cols {
		names = append(names, c.name)
	}
	where := notOurs
	if o.sample > 1 {
		where += fmt.Sprintf(" AND id < '%02x'", 256/o.sample)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(names, ", "), table, where))
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	defer rows.Close()
	var (
		n                 int
		id, account, raw  string
		tm, ws, we, fetch time.Time
		errs              int
	)
	vals := make([]any, len(cols))
	for i, c := range cols {
		switch c.kind {
		case chString:
			vals[i] = new(string)
		case chInt:
			vals[i] = new(int64)
		case chTime:
			vals[i] = new(time.Time)
		}
	}
	dest := append([]any{&id, &account, &tm, &ws, &we, &fetch, &raw}, vals...)
	fail := func(format string, args ...any) {
		errs++
		if errs <= 10 {
			t.Errorf("%s row %s: %s", src, id, fmt.Sprintf(format, args...))
		}
	}
	var b record.Builder
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		n++
		rec := []byte(raw)
		// The raw record gives back the row's C7 id ...
		if got, err := record.ID(src, rec); err != nil || got != id {
			fail("record.ID of the stored record = %s (%v)", got, err)
			continue
		}
		// ... so does its canonical JSON, which is a fixed point ...
		canon, err := record.Canonical(rec)
		if err != nil || record.IDOfCanonical(src, canon) != id {
			fail("canonical JSON of the stored record does not hash to the id (%v)", err)
		} else if again, _ := record.Canonical(canon); !bytes.Equal(again, canon) {
			fail("canonical JSON is not stable")
		}
		// ... and its record time, read as the collector reads it and
		// with encoding/json.
		env, flaw := b.Build(src, account, chTimeField[src], ws, we, fetch, rec)
		if flaw != 0 || env.ID != id {
			fail("envelope of the stored record: id %s (%v)", env.ID, flaw)
			continue
		}
		rt := env.Time
		if jt, err := chRecordTime(rec, chTimeField[src]); err != nil || !jt.Equal(rt) {
			fail("record time read with encoding/json: %v (%v), the collector's reading %v", jt, err, rt)
		}
		if tm.UnixMilli() != rt.UnixMilli() {
			fail("time = %s, the record says %s", tm.UTC().Format(time.RFC3339Nano), rt.Format(time.RFC3339Nano))
		}
		if rt.Before(ws) || !rt.Before(we) {
			fail("record time %s outside its window [%s, %s)", rt.Format(time.RFC3339Nano), ws.UTC(), we.UTC())
		}
		if fetch.Before(we) {
			fail("fetched_at %s before window_end %s", fetch.UTC(), we.UTC())
		}
		if !o.fetchedFrom.IsZero() && (fetch.Before(o.fetchedFrom.Truncate(time.Millisecond)) || fetch.After(o.fetchedTo)) {
			fail("fetched_at %s outside the run [%s, %s]", fetch.UTC(), o.fetchedFrom.UTC(), o.fetchedTo.UTC())
		}
		exp, err := chExpectedTyped(rec, cols)
		if err != nil {
			fail("%v", err)
			continue
		}
		for i, c := range cols {
			var got any
			switch v := vals[i].(type) {
			case *string:
				got = *v
			case *int64:
				got = *v
			case *time.Time:
				got = v.UnixMilli()
			}
			if got != exp[i] {
				fail("column %s = %#v, the record %s says %#v", c.name, got, rec, exp[i])
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	if errs > 10 {
		t.Errorf("%s: %d row errors in all", src, errs)
	}
	return n
}

// chRecordTime reads the record time member of raw as the collector must.
func chRecordTime(raw []byte, field string) (time.Time, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return time.Time{}, err
	}
	return record.ParseTime(m[field])
}

// chExpectedTyped is what each typed column must hold for raw, read with
// encoding/json (an independent reading of the sink's rules, doc.go).
func chExpectedTyped(raw []byte, cols []chTypedCol) ([]any, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("record is not a JSON object: %v", err)
	}
	out := make([]any, len(cols))
	for i, c := range cols {
		v, ok := top[c.path[0]]
		if ok && len(c.path) == 2 {
			var inner map[string]json.RawMessage
			if json.Unmarshal(v, &inner) != nil {
				ok = false
			} else {
				v, ok = inner[c.path[1]]
			}
		}
		v = bytes.TrimSpace(v)
		switch c.kind {
		case chString:
			out[i] = ""
			if ok && len(v) > 0 {
				switch {
				case v[0] == '"':
					var s string
					if json.Unmarshal(v, &s) == nil {
						out[i] = s
					}
				case v[0] == '-' || (v[0] >= '0' && v[0] <= '9') || string(v) == "true" || string(v) == "false":
					out[i] = string(v)
				}
			}
		case chInt:
			out[i] = int64(0)
			if ok && !bytes.ContainsAny(v, ".eE\"") {
				if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
					out[i] = n
				}
			}
		case chTime:
			out[i] = int64(0)
			if ok {
				if tm, err := record.ParseTime(v); err == nil {
					out[i] = tm.UnixMilli()
				}
			}
		}
	}
	return out, nil
}

// chCountRows is count() over the tables of srcs (without FINAL); a missing
// table counts 0.
func chCountRows(t testing.TB, srv *chtest.Server, db string, srcs []string) int64 {
	t.Helper()
	var q []string
	for _, s := range srcs {
		q = append(q, "'"+s+"'")
	}
	return srv.QueryInt(t, fmt.Sprintf("SELECT toInt64(ifNull(sum(total_rows), 0)) FROM system.tables WHERE database = '%s' AND name IN (%s)", db, strings.Join(q, ",")))
}

// chDuplicatedBlocks is the server's count of insert blocks it dropped as
// repeats of an earlier insert_deduplication_token.
func chDuplicatedBlocks(t testing.TB, srv *chtest.Server) int64 {
	t.Helper()
	n, _ := strconv.ParseInt(srv.Query(t, "SELECT toInt64(sum(value)) FROM system.events WHERE event = 'DuplicatedInsertedBlocks'"), 10, 64)
	return n
}

// chAPIRecords fetches the records of one window of a core search from the
// simulator as any client would (C1, C3): the bytes it serves, one page.
func chAPIRecords(t *testing.T, sim *apisim.Server, path, account string, start, end time.Time) []json.RawMessage {
	t.Helper()
	post := func(url, body string, hdr map[string]string) []byte {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d %s (%v)", url, resp.StatusCode, b, err)
		}
		return b
	}
	var tok struct{ Token string }
	if err := json.Unmarshal(post(sim.URL()+"/api/v2/access/tokens", `{"keyId":"sim-key","expiryTime":600}`,
		map[string]string{"X-SVC-UAKS": "sim-secret"}), &tok); err != nil || tok.Token == "" {
		t.Fatalf("token: %v", err)
	}
	body := fmt.Sprintf(`{"timeFilter":{"startTime":%q,"endTime":%q}}`, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	var page struct {
		Paging *struct {
			Rows, TotalRows int
		}
		Data []json.RawMessage
	}
	if err := json.Unmarshal(post(sim.URL()+path, body, map[string]string{"Authorization": "Bearer " + tok.Token, "Account-Name": account}), &page); err != nil {
		t.Fatal(err)
	}
	if page.Paging != nil && page.Paging.TotalRows != len(page.Data) {
		t.Fatalf("%s [%s, %s): %d of %d rows on the first page; pick a smaller window", path, start, end, len(page.Data), page.Paging.TotalRows)
	}
	return page.Data
}

// chStoredRecords reads id -> raw record of one stream's rows in [start, end).
func chStoredRecords(t *testing.T, conn driver.Conn, db, src, account string, start, end time.Time) map[string][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT id, record FROM %s.%s WHERE account = ? AND time >= fromUnixTimestamp64Milli(?) AND time < fromUnixTimestamp64Milli(?)", db, src),
		account, start.UnixMilli(), end.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var id, raw string
		if err := rows.Scan(&id, &raw); err != nil {
			t.Fatal(err)
		}
		out[id] = []byte(raw)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// chCutProxy forwards TCP connections to a server. While it has cuts left, it
// cuts a connection at the moment the server starts to answer after the
// client uploaded more than threshold bytes since the server last spoke:
// the server received a whole insert (and may have stored it), the client
// never hears back. Queries, pings and DDL upload far less than threshold.
type chCutProxy struct {
	ln        net.Listener
	target    string
	threshold int64
	left      atomic.Int32
	cuts      atomic.Int32
	wg        sync.WaitGroup
	mu        sync.Mutex
	conns     []net.Conn
}

func newChCutProxy(t *testing.T, target string, threshold int64) *chCutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &chCutProxy{ln: ln, target: target, threshold: threshold}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *chCutProxy) addr() string { return p.ln.Addr().String() }

func (p *chCutProxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		var since atomic.Int64 // uploaded since the server last answered
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := client.Read(buf)
				if n > 0 {
					since.Add(int64(n))
					if _, werr := server.Write(buf[:n]); werr != nil {
						client.Close()
						return
					}
				}
				if err != nil {
					server.Close()
					return
				}
			}
		}()
		go func() {
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 {
					if since.Swap(0) > p.threshold && p.left.Add(-1) >= 0 {
						p.cuts.Add(1)
						client.Close()
						server.Close()
						return
					}
					if _, werr := client.Write(buf[:n]); werr != nil {
						server.Close()
						return
					}
				}
				if err != nil {
					client.Close()
					return
				}
			}
		}()
	}
}

// chCPUTicks is the user+system CPU time of process pid in clock ticks
// (/proc/PID/stat fields 14 and 15, 100 a second).
func chCPUTicks(pid int) (int64, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}
