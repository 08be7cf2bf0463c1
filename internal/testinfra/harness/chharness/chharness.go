package chharness

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"sort"
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
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// timeField is the record time member of each source (CONTRACT C3,
// C6).
var timeField = map[string]string{
	"changed_files": "startTime", "connections": "startTime", "dns": "createdTime",
	"user_logins": "createdTime", "agent_info": "createdTime", "audit_logs": "createdTime",
	"cloud_activities": "startTime", "edge_audit_events": "create_time", "edge_alerts": "create_time",
}

// Kinds of typed columns, as the sink documents them (doc.go): a string
// column takes a JSON string or the literal text of a number or boolean; an
// Int64 column a JSON integer; a time column what record.ParseTime reads.
// Anything else leaves the column's default. An IP column (Nullable(IPv6))
// takes a JSON string holding an IPv4 or IPv6 address without a zone, a
// UInt8 column (Nullable(UInt8)) a JSON integer from 0 to 255, bare or
// quoted; anything else is NULL. Both are read back as text ("" for NULL).
const (
	colString = iota
	colInt
	colTime
	colIP
	colUInt8
)

type typedCol struct {
	name string
	path []string // record member, or object member and the name inside
	kind int
}

func col(name, path string, kind int) typedCol {
	return typedCol{name: name, path: strings.Split(path, "."), kind: kind}
}

// typedColumns are the typed columns of each table with the record member
// they must hold, written down here from the seed's record tables
// independently of the sink's schema.go, so that a wrong mapping there
// fails this test.
var typedColumns = map[string][]typedCol{
	"changed_files": {col("mid", "mid", colInt), col("file_path", "filePath", colString), col("filedata_hash", "filedataHash", colString), col("size", "size", colInt)},
	"connections": {col("src_mid", "srcEntityId.mid", colInt), col("dst_mid", "dstEntityId.mid", colInt),
		col("src_in_bytes", "srcInBytes", colInt), col("src_out_bytes", "srcOutBytes", colInt),
		col("dst_in_bytes", "dstInBytes", colInt), col("dst_out_bytes", "dstOutBytes", colInt), col("num_conns", "numConns", colInt)},
	"dns":              {col("mid", "mid", colInt), col("fqdn", "fqdn", colString), col("host_ip_addr", "hostIpAddr", colIP)},
	"user_logins":      {col("mid", "mid", colInt), col("username", "username", colString), col("activity_type", "activityType", colString), col("source_ip_addr", "sourceIpAddr", colIP)},
	"cloud_activities": {col("event_type", "eventType", colString), col("event_model", "eventModel", colString), col("event_id", "eventId", colInt)},
	"audit_logs": {col("account_name", "accountName", colString), col("user_name", "userName", colString),
		col("event_name", "eventName", colString), col("user_action", "userAction", colString)},
	"agent_info": {col("mid", "mid", colInt), col("hostname", "hostname", colString), col("os", "os", colString),
		col("status", "status", colString), col("agent_version", "agentVersion", colString),
		col("ip_addr", "ipAddr", colIP), col("last_update", "lastUpdate", colTime)},
	"edge_audit_events": {col("method", "method", colString), col("path", "path", colString), col("response_status", "response_status", colInt),
		col("user_login", "user_login", colString), col("client_ip", "client_ip", colIP)},
	"edge_alerts": {col("uuid", "uuid", colString), col("severity", "severity", colUInt8), col("status", "status", colString),
		col("incident_status", "incident_status", colString), col("event_type", "event_type", colString), col("update_time", "update_time", colTime)},
}

// Addr is the server's address for protocol proto.
func Addr(srv *chtest.Server, proto string) string {
	if proto == "http" {
		return srv.HTTP
	}
	return srv.Native
}

// SinkYAML is the sink and pipeline configuration of the ClickHouse
// tests (harness.Config.Sink): the server at addr over proto ("native" or
// "http"), database db, more keys of sink.clickhouse in chKeys
// ("batch_rows: 10000"), and 16 sink workers and a 100,000-record buffer,
// as configs/clickhouse.yaml has them, so that inserts gather many pages.
func SinkYAML(addr, proto, db string, chKeys ...string) string {
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

// Open opens a native connection for reading the tables back.
func Open(t testing.TB, srv *chtest.Server) driver.Conn {
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

// VerifyOpts tunes Verify.
type VerifyOpts struct {
	// From is where the backfill started; Wms are the committed watermarks.
	From time.Time
	Wms  map[record.Stream]checkpoint.State
	// Streams are compared with /_truth; rows of other streams are errors.
	Streams []record.Stream
	// Skip names rows the test put there itself (older schema rows).
	Skip map[string]bool
	// FetchedFrom and FetchedTo bound fetched_at (zero: unchecked).
	FetchedFrom, FetchedTo time.Time
	// Sample: one row in Sample (a power of two up to 256; 0 means 32) is
	// read back and checked against its raw record.
	Sample int
	// ExactRows asks that count() without FINAL equal the distinct ids:
	// nothing was stored twice, not even before a merge.
	ExactRows bool
}

// VerifyResult is what Verify found.
type VerifyResult struct {
	Distinct int64          // records compared with truth
	Rows     int64          // rows stored (without FINAL)
	Uniq     int64          // distinct ids stored
	Typed    map[string]int // rows checked one by one, per table
}

// TypedRows is how many rows Verify checked one by one, in all.
func (r VerifyResult) TypedRows() int {
	n := 0
	for _, v := range r.Typed {
		n += v
	}
	return n
}

// Verify checks the tables of the streams' sources in db:
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
func Verify(t *testing.T, srv *chtest.Server, conn driver.Conn, sim *apisim.Server, db string, o VerifyOpts) VerifyResult {
	t.Helper()
	if o.Sample < 1 {
		o.Sample = 32
	}
	res := VerifyResult{Typed: map[string]int{}}
	want := map[record.Stream]bool{}
	var srcs []string
	byAcct := map[string][]string{}
	for _, k := range o.Streams {
		want[k] = true
		if len(byAcct[k.Source]) == 0 {
			srcs = append(srcs, k.Source)
		}
		byAcct[k.Source] = append(byAcct[k.Source], k.Account)
	}
	notOurs := "1"
	if len(o.Skip) > 0 {
		notOurs = "id NOT IN (" + quoteList(o.Skip) + ")"
	}
	for _, src := range srcs {
		table := db + "." + src
		// Digests per account and day, over distinct ids, below each
		// stream's watermark (rounded up to the ms: times are ms).
		var conds []string
		for _, a := range byAcct[src] {
			st, ok := harness.WatermarkOf(o.Wms, record.Stream{Source: src, Account: a})
			if !ok || !st.Watermark.After(o.From) {
				t.Errorf("%s/%s: no watermark past the start %v (%+v)", src, a, o.From, st)
				continue
			}
			conds = append(conds, fmt.Sprintf("(account = '%s' AND time < fromUnixTimestamp64Milli(toInt64(%d)))", a, ceilMilli(st.Watermark)))
		}
		if len(conds) == 0 {
			continue
		}
		got := map[string]record.Digest{}
		q := fmt.Sprintf(`SELECT account, toString(toDate(time)), count(),
			lower(hex(reinterpretAsFixedString(groupBitXor(reinterpretAsUInt256(unhex(id))))))
			FROM (SELECT id, any(account) AS account, any(time) AS time FROM %s WHERE %s GROUP BY id)
			WHERE time >= fromUnixTimestamp64Milli(toInt64(%d)) AND (%s)
			GROUP BY 1, 2 FORMAT TSVRaw`, table, notOurs, ceilMilli(o.From), strings.Join(conds, " OR "))
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
			st, _ := harness.WatermarkOf(o.Wms, record.Stream{Source: src, Account: a})
			end := st.Watermark
			for _, d := range harness.Days(o.From, end) {
				wantN, wantX := sim.Truth(src, a, d.Lo, d.Hi)
				g := got[a+"/"+d.Date.Format("2006-01-02")]
				if g.Count != wantN || g.Hex() != wantX {
					t.Errorf("%s/%s day %s [%s, %s): the table holds %d distinct records (xor %.12s), truth %d (xor %.12s)",
						src, a, d.Date.Format("2006-01-02"), d.Lo.Format(time.RFC3339), d.Hi.Format(time.RFC3339), g.Count, g.Hex(), wantN, wantX)
				}
				res.Distinct += g.Count
			}
		}

		counts := strings.Fields(srv.Query(t, fmt.Sprintf(`SELECT
			(SELECT count() FROM %[1]s WHERE %[2]s),
			(SELECT count() FROM %[1]s FINAL WHERE %[2]s),
			(SELECT uniqExact(id) FROM %[1]s WHERE %[2]s),
			(SELECT count() FROM (SELECT id FROM %[1]s GROUP BY id HAVING uniqExact(account, time) > 1))`, table, notOurs)))
		var rows, final, uniq, mixed int64
		fmt.Sscan(strings.Join(counts, " "), &rows, &final, &uniq, &mixed)
		res.Rows += rows
		res.Uniq += uniq
		if final != uniq || mixed != 0 {
			t.Errorf("%s: count() FINAL = %d, uniqExact(id) = %d; %d ids with more than one account or time", src, final, uniq, mixed)
		}
		if o.ExactRows && rows != uniq {
			t.Errorf("%s: %d rows stored (without FINAL) for %d distinct ids: something was stored twice", src, rows, uniq)
		}
		for _, a := range strings.Fields(srv.Query(t, fmt.Sprintf("SELECT DISTINCT account FROM %s WHERE %s", table, notOurs))) {
			if !want[record.Stream{Source: src, Account: a}] {
				t.Errorf("%s: rows of account %q, which this run does not collect", src, a)
			}
		}
		res.Typed[src] = checkRows(t, srv, conn, table, src, o, notOurs)
		if res.Typed[src] == 0 && rows > 0 {
			t.Errorf("%s: no row sampled", src)
		}
	}
	return res
}

// ceilMilli is t in Unix ms, rounded up.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}

func quoteList(set map[string]bool) string {
	var q []string
	for s := range set {
		q = append(q, "'"+s+"'")
	}
	return strings.Join(q, ",")
}

// checkRows reads the sampled rows of one table whole and checks each
// against its raw record; it returns how many it checked. A read cut by a
// crash of the test server is done again whole (chtest.Server.Read), so the
// findings are reported once the read completed.
func checkRows(t *testing.T, srv *chtest.Server, conn driver.Conn, table, src string, o VerifyOpts, notOurs string) int {
	t.Helper()
	cols := typedColumns[src]
	names := []string{"id", "account", "time", "window_start", "window_end", "fetched_at", "record"}
	for _, c := range cols {
		if c.kind == colIP || c.kind == colUInt8 {
			names = append(names, "ifNull(toString("+c.name+"), '')")
			continue
		}
		names = append(names, c.name)
	}
	where := notOurs
	if o.Sample > 1 {
		where += fmt.Sprintf(" AND id < '%02x'", 256/o.Sample)
	}
	var (
		n                 int
		id, account, raw  string
		tm, ws, we, fetch time.Time
		errs              int
		found             []string
	)
	vals := make([]any, len(cols))
	for i, c := range cols {
		switch c.kind {
		case colString, colIP, colUInt8:
			vals[i] = new(string)
		case colInt:
			vals[i] = new(int64)
		case colTime:
			vals[i] = new(time.Time)
		}
	}
	dest := append([]any{&id, &account, &tm, &ws, &we, &fetch, &raw}, vals...)
	fail := func(format string, args ...any) {
		errs++
		if errs <= 10 {
			found = append(found, fmt.Sprintf("%s row %s: %s", src, id, fmt.Sprintf(format, args...)))
		}
	}
	var b record.Builder
	srv.Read(t, "read "+table, func() error {
		n, errs, found = 0, 0, nil
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		rows, err := conn.Query(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(names, ", "), table, where))
		if err != nil {
			return err
		}
		defer rows.Close()
		return scanRows(rows, dest, func() {
			n++
			rec := []byte(raw)
			// The raw record gives back the row's C7 id ...
			if got, err := record.ID(src, rec); err != nil || got != id {
				fail("record.ID of the stored record = %s (%v)", got, err)
				return
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
			env, flaw := b.Build(src, account, timeField[src], ws, we, fetch, rec)
			if flaw != 0 || env.ID != id {
				fail("envelope of the stored record: id %s (%v)", env.ID, flaw)
				return
			}
			rt := env.Time
			if jt, err := recordTime(rec, timeField[src]); err != nil || !jt.Equal(rt) {
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
			if !o.FetchedFrom.IsZero() && (fetch.Before(o.FetchedFrom.Truncate(time.Millisecond)) || fetch.After(o.FetchedTo)) {
				fail("fetched_at %s outside the run [%s, %s]", fetch.UTC(), o.FetchedFrom.UTC(), o.FetchedTo.UTC())
			}
			exp, err := expectedTyped(rec, cols)
			if err != nil {
				fail("%v", err)
				return
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
		})
	})
	for _, f := range found {
		t.Error(f)
	}
	if errs > 10 {
		t.Errorf("%s: %d row errors in all", src, errs)
	}
	return n
}

// scanRows scans each row of rows into dest and calls check; it returns the
// error of the first failed scan or of the read.
func scanRows(rows driver.Rows, dest []any, check func()) error {
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		check()
	}
	return rows.Err()
}

// recordTime reads the record time member of raw as the collector must.
func recordTime(raw []byte, field string) (time.Time, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return time.Time{}, err
	}
	return record.ParseTime(m[field])
}

// expectedTyped is what each typed column must hold for raw, read with
// encoding/json (an independent reading of the sink's rules, doc.go).
func expectedTyped(raw []byte, cols []typedCol) ([]any, error) {
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
		case colString:
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
		case colInt:
			out[i] = int64(0)
			if ok && !bytes.ContainsAny(v, ".eE\"") {
				if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
					out[i] = n
				}
			}
		case colTime:
			out[i] = int64(0)
			if ok {
				if tm, err := record.ParseTime(v); err == nil {
					out[i] = tm.UnixMilli()
				}
			}
		case colIP:
			out[i] = ""
			var s string
			if ok && json.Unmarshal(v, &s) == nil {
				if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
					out[i] = netip.AddrFrom16(a.As16()).String()
				}
			}
		case colUInt8:
			out[i] = ""
			if ok {
				var s string
				if json.Unmarshal(v, &s) == nil {
					v = []byte(s)
				}
				if !bytes.ContainsAny(v, ".eE\"+-") {
					if n, err := strconv.ParseUint(string(v), 10, 8); err == nil && (len(v) == 1 || v[0] != '0') {
						out[i] = strconv.FormatUint(n, 10)
					}
				}
			}
		}
	}
	return out, nil
}

// CountRows is count() over the tables of srcs (without FINAL); a missing
// table counts 0.
func CountRows(t testing.TB, srv *chtest.Server, db string, srcs []string) int64 {
	t.Helper()
	var q []string
	for _, s := range srcs {
		q = append(q, "'"+s+"'")
	}
	return srv.QueryInt(t, fmt.Sprintf("SELECT toInt64(ifNull(sum(total_rows), 0)) FROM system.tables WHERE database = '%s' AND name IN (%s)", db, strings.Join(q, ",")))
}

// DuplicatedBlocks is the server's count of insert blocks it dropped as
// repeats of an earlier insert_deduplication_token.
func DuplicatedBlocks(t testing.TB, srv *chtest.Server) int64 {
	t.Helper()
	n, _ := strconv.ParseInt(srv.Query(t, "SELECT toInt64(sum(value)) FROM system.events WHERE event = 'DuplicatedInsertedBlocks'"), 10, 64)
	return n
}

// StoredRecords reads id -> raw record of one stream's rows in [start, end).
func StoredRecords(t *testing.T, srv *chtest.Server, conn driver.Conn, db, src, account string, start, end time.Time) map[string][]byte {
	t.Helper()
	var out map[string][]byte
	srv.Read(t, "read "+db+"."+src, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rows, err := conn.Query(ctx, fmt.Sprintf("SELECT id, record FROM %s.%s WHERE account = ? AND time >= fromUnixTimestamp64Milli(?) AND time < fromUnixTimestamp64Milli(?)", db, src),
			account, start.UnixMilli(), end.UnixMilli())
		if err != nil {
			return err
		}
		defer rows.Close()
		out = map[string][]byte{}
		for rows.Next() {
			var id, raw string
			if err := rows.Scan(&id, &raw); err != nil {
				return err
			}
			out[id] = []byte(raw)
		}
		return rows.Err()
	})
	return out
}

// NoFailedWrites fails t for each of bad found in logs, the log of a run
// that met no fault on purpose, unless the test server crashed during the
// run (srv.Restarts() is no longer restarts): then failed writes are what
// the collector must do, and the test's checks of completeness say whether
// it recovered. The crash is logged.
func NoFailedWrites(t testing.TB, srv *chtest.Server, restarts int, logs string, bad ...string) {
	t.Helper()
	crashed := srv.Restarts() - restarts
	for _, b := range bad {
		n := strings.Count(logs, b)
		switch {
		case n > 0 && crashed > 0:
			t.Logf("%d times %q: the test server crashed %d times during the run (see stderr)", n, b, crashed)
		case n > 0:
			t.Errorf("%d times %q in a clean run", n, b)
		}
	}
}

// CutProxy forwards TCP connections to a server. While it has cuts left, it
// cuts a connection at the moment the server starts to answer after the
// client uploaded more than threshold bytes since the server last spoke:
// the server received a whole insert (and may have stored it), the client
// never hears back. Queries, pings and DDL upload far less than threshold.
//
// The zero value is not usable; use NewCutProxy.
type CutProxy struct {
	ln        net.Listener
	target    string
	threshold int64
	left      atomic.Int32
	cuts      atomic.Int32
	wg        sync.WaitGroup
	mu        sync.Mutex
	conns     []net.Conn
}

// NewCutProxy starts a proxy on loopback to target that makes cuts cuts
// (threshold: see CutProxy), and stops it when t ends.
func NewCutProxy(t *testing.T, target string, threshold int64, cuts int) *CutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{ln: ln, target: target, threshold: threshold}
	p.left.Store(int32(cuts))
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

// Addr is the proxy's host:port.
func (p *CutProxy) Addr() string { return p.ln.Addr().String() }

// Cuts is how many connections the proxy cut so far.
func (p *CutProxy) Cuts() int { return int(p.cuts.Load()) }

func (p *CutProxy) serve() {
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

// CheckLatestAlerts compares edge_alerts_latest with the latest version of
// each alert (greatest update_time) worked out from the raw records.
func CheckLatestAlerts(t *testing.T, srv *chtest.Server, db string) {
	t.Helper()
	type alert struct {
		UUID   string `json:"uuid"`
		Status string `json:"status"`
		Upd    int64  `json:"update_time"`
	}
	latest := map[string]alert{}
	for _, line := range strings.Split(srv.Query(t, "SELECT account, record FROM "+db+".edge_alerts FORMAT TSVRaw"), "\n") {
		acct, raw, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		var a alert
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			t.Fatalf("edge alert %s: %v", raw, err)
		}
		k := acct + "/" + a.UUID
		if cur, ok := latest[k]; !ok || a.Upd > cur.Upd {
			latest[k] = a
		}
	}
	var want []string
	for k, a := range latest {
		want = append(want, fmt.Sprintf("%s\t%s\t%d", k, a.Status, a.Upd))
	}
	sort.Strings(want)
	got := srv.Query(t, "SELECT concat(account, '/', uuid), status, toUnixTimestamp64Milli(update_time) FROM "+db+
		".edge_alerts_latest ORDER BY 1 FORMAT TSVRaw")
	if len(want) < 100 {
		t.Fatalf("only %d edge alerts", len(want))
	}
	if got != strings.Join(want, "\n") {
		g := strings.Split(got, "\n")
		t.Errorf("edge_alerts_latest has %d rows, want %d; first: %q, want %q", len(g), len(want), g[0], want[0])
	}
}
