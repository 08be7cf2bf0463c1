package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/testinfra/chtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(chtest.Main(m)) }

// logBuffer collects JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// entries are the logged records, each as a map.
func (l *logBuffer) entries(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(l.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %s: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// with returns the entries of level whose message contains msg.
func (l *logBuffer) with(t *testing.T, level, msg string) []map[string]any {
	var out []map[string]any
	for _, e := range l.entries(t) {
		if e["level"] == level && strings.Contains(e["msg"].(string), msg) {
			out = append(out, e)
		}
	}
	return out
}

func newLog() (*logBuffer, *slog.Logger) {
	lb := &logBuffer{}
	return lb, slog.New(slog.NewJSONHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func connect(t *testing.T, srv *chtest.Server) driver.Conn {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{srv.Native}, DialTimeout: 5 * time.Second, ReadTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// v1DDL is the DDL of source's table (or the view) as the first schema had
// it (testdata/v1), in database db.
func v1DDL(t *testing.T, db, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v1", name+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "`svc`.", "`"+db+"`.")
}

// The server parses every statement of both golden sets: the cluster's
// cannot run on the test server (no Keeper, no remote_servers), so its
// parser is the check they get.
func TestEveryStatementParsesOnTheServer(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	conn := connect(t, srv)
	ctx := ctxFor(t)
	for name, o := range map[string]Options{"single": singleOpts, "cluster": clusterOpts} {
		files := statements(o)
		names := sortedKeys(files)
		n := 0
		for _, file := range names {
			for _, stmt := range splitStatements(files[file]) {
				if strings.HasPrefix(stmt, "INSERT INTO") && strings.HasSuffix(stmt, ")") {
					stmt += " VALUES"
				}
				var formatted string
				if err := conn.QueryRow(ctx, "SELECT formatQuery(?)", stmt).Scan(&formatted); err != nil {
					t.Errorf("%s %s: the server does not parse\n%s\n: %v", name, file, stmt, err)
				}
				n++
			}
		}
		t.Logf("%s: %d statements parsed", name, n)
	}
}

// splitStatements splits a golden file into statements: CREATE statements
// span lines, the others take one line each.
func splitStatements(text string) []string {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "CREATE") {
		return []string{text}
	}
	return strings.Split(text, "\n")
}

// Tables Ensure creates have the sorting key, primary key, codecs, skip
// indexes and TTL of the DDL, as the server reports them; a second Ensure
// finds nothing to change.
func TestEnsureCreatesTheTablesAndASecondEnsureChangesNothing(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	conn := connect(t, srv)
	ctx := ctxFor(t)
	o := Options{Database: srv.NewDatabase(t), TTL: 400 * 24 * time.Hour}
	lb, log := newLog()
	if _, err := Ensure(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	for _, spec := range Tables() {
		got := srv.Query(t, fmt.Sprintf("SELECT sorting_key, primary_key, engine_full FROM system.tables WHERE database = '%s' AND name = '%s' FORMAT TSVRaw", o.Database, spec.Source))
		f := strings.Split(got, "\t")
		if len(f) != 3 || f[0] != strings.Join(spec.SortingKey(), ", ") || f[1] != strings.Join(spec.PrimaryKey(), ", ") {
			t.Errorf("%s: sorting and primary key %q", spec.Source, got)
			continue
		}
		if tableTTL(f[2]) != "toDateTime(time) + toIntervalDay(400)" || !strings.Contains(f[2], "ttl_only_drop_parts = 1") {
			t.Errorf("%s: TTL %q in %s", spec.Source, tableTTL(f[2]), f[2])
		}
		codecs := srv.Query(t, fmt.Sprintf("SELECT name, compression_codec FROM system.columns WHERE database = '%s' AND table = '%s' ORDER BY position FORMAT TSVRaw", o.Database, spec.Source))
		var want []string
		for _, c := range spec.AllColumns() {
			w := c.Name + "\t"
			if c.Codec != "" {
				w += "CODEC(" + c.Codec + ")"
			}
			want = append(want, w)
		}
		if codecs != strings.Join(want, "\n") {
			t.Errorf("%s: codecs\n%s\nwant\n%s", spec.Source, codecs, strings.Join(want, "\n"))
		}
		idx := srv.Query(t, fmt.Sprintf("SELECT name, expr, type_full FROM system.data_skipping_indices WHERE database = '%s' AND table = '%s' ORDER BY name FORMAT TSVRaw", o.Database, spec.Source))
		var wantIdx []string
		for _, col := range spec.Bloom {
			wantIdx = append(wantIdx, IndexName(col)+"\t"+col+"\tbloom_filter("+bloomFPR+")")
		}
		sort.Strings(wantIdx)
		if idx != strings.Join(wantIdx, "\n") {
			t.Errorf("%s: skip indexes\n%s\nwant\n%s", spec.Source, idx, strings.Join(wantIdx, "\n"))
		}
	}
	if n := len(lb.entries(t)); n != 0 {
		t.Errorf("Ensure of new tables logged %d lines:\n%s", n, lb.buf.String())
	}
	if _, err := Ensure(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	if n := len(lb.entries(t)); n != 0 {
		t.Errorf("a second Ensure logged %d lines (changes it should not have made):\n%s", n, lb.buf.String())
	}
	if err := Check(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	if n := len(lb.entries(t)); n != 0 {
		t.Errorf("Check of current tables logged %d lines:\n%s", n, lb.buf.String())
	}
}

// createV1 creates every table and the view of the first schema in db, with
// one row in dns and one alert.
func createV1(t *testing.T, srv *chtest.Server, db string) {
	t.Helper()
	for _, s := range append(Sources(), "edge_alerts"+ViewSuffix) {
		srv.Exec(t, v1DDL(t, db, s))
	}
	srv.Exec(t, `INSERT INTO `+db+`.dns (id, account, time, window_start, window_end, fetched_at, record, mid, fqdn, host_ip_addr)
		VALUES ('d1', 'acme', '2026-01-02 03:04:05', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-03 00:01:00', '{"fqdn":"a.example"}', 7, 'a.example', '192.0.2.1')`)
	srv.Exec(t, `INSERT INTO `+db+`.edge_alerts (id, account, time, window_start, window_end, fetched_at, record, uuid, status, update_time)
		VALUES ('a1', 'acme', '2026-01-02 03:04:05', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-03 00:01:00', '{}', 'u1', 'OPEN', '2026-01-02 04:00:00'),
		       ('a2', 'acme', '2026-01-02 03:04:05', '2026-01-02 00:00:00', '2026-01-03 00:00:00', '2026-01-03 00:02:00', '{}', 'u1', 'CLOSED', '2026-01-02 05:00:00')`)
}

// Check of tables of the first schema changes nothing and says what Start
// would do (info) and what it cannot (a warning per table with the
// migration); Ensure then does it: record_original added, codecs set,
// bloom filters added and built, TTL set, and the same warning.
func TestAFirstSchemaTableIsEvolvedInPlaceAndItsSortingKeyWarned(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	conn := connect(t, srv)
	ctx := ctxFor(t)
	o := Options{Database: srv.NewDatabase(t), TTL: 730 * 24 * time.Hour}
	createV1(t, srv, o.Database)
	before := srv.Query(t, "SELECT name, type, compression_codec FROM system.columns WHERE database = '"+o.Database+"' ORDER BY table, position")

	lb, log := newLog()
	if err := Check(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	if after := srv.Query(t, "SELECT name, type, compression_codec FROM system.columns WHERE database = '"+o.Database+"' ORDER BY table, position"); after != before {
		t.Error("Check changed the tables")
	}
	if n := srv.QueryInt(t, "SELECT count() FROM system.data_skipping_indices WHERE database = '"+o.Database+"'"); n != 0 {
		t.Errorf("Check added %d indexes", n)
	}
	warns := lb.with(t, "WARN", "older sorting key")
	if len(warns) != len(Tables()) {
		t.Fatalf("Check warned about %d sorting keys, want %d:\n%s", len(warns), len(Tables()), lb.buf.String())
	}
	for _, w := range warns {
		if w["sorting_key"] != "account, time, id" || !strings.Contains(w["migrate"].(string), "RENAME TABLE") {
			t.Errorf("warning %v", w)
		}
	}
	for what, per := range map[string]int{"add column record_original": 1, "set the codecs": 1, "add the skip indexes": 1, "set the TTL": 2} {
		if n := len(lb.with(t, "INFO", "start will "+what)); n != per*len(Tables()) {
			t.Errorf("Check said %d times that Start will %s, want %d", n, what, per*len(Tables()))
		}
	}

	lb, log = newLog()
	if _, err := Ensure(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	if n := len(lb.with(t, "WARN", "older sorting key")); n != len(Tables()) {
		t.Errorf("Ensure warned about %d sorting keys, want %d", n, len(Tables()))
	}
	for _, spec := range Tables() {
		tbl := o.Database + "." + spec.Source
		st, err := newEnsurer(conn, o, time.Minute, nil, false).state(ctx, spec.Source)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range spec.AllColumns() {
			if c.Codec != "" && st.codecs[c.Name] != "CODEC("+c.Codec+")" {
				t.Errorf("%s.%s: codec %q, want %s", tbl, c.Name, st.codecs[c.Name], c.Codec)
			}
		}
		if st.cols["record_original"] != typeNullString {
			t.Errorf("%s: record_original %q", tbl, st.cols["record_original"])
		}
		for _, col := range spec.Bloom {
			if !st.indexes[IndexName(col)] {
				t.Errorf("%s: no index %s", tbl, IndexName(col))
			}
		}
		if got := tableTTL(st.engineFull); got != "toDateTime(time) + toIntervalDay(730)" {
			t.Errorf("%s: TTL %q", tbl, got)
		}
		if st.sortingKey != "account, time, id, tenant" {
			t.Errorf("%s: sorting key %s, want the old one with the tenant appended", tbl, st.sortingKey)
		}
	}
	// The index of the row written before is built (the mutation runs in
	// the background): a search by the IP finds it through the index.
	waitMutations(t, srv, o.Database)
	if got := srv.Query(t, "SELECT id FROM "+o.Database+".dns WHERE host_ip_addr = '192.0.2.1' SETTINGS force_data_skipping_indices = 'bf_host_ip_addr'"); got != "d1" {
		t.Errorf("search through bf_host_ip_addr: %q", got)
	}
	if got := srv.Query(t, "SELECT status FROM "+o.Database+".edge_alerts_latest WHERE uuid = 'u1'"); got != "CLOSED" {
		t.Errorf("edge_alerts_latest after the view was replaced: %q", got)
	}
	// Nothing left to do.
	lb, log = newLog()
	if _, err := Ensure(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	if n := len(lb.with(t, "INFO", "")); n != 0 {
		t.Errorf("a second Ensure changed something:\n%s", lb.buf.String())
	}
}

func waitMutations(t *testing.T, srv *chtest.Server, db string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for srv.QueryInt(t, "SELECT count() FROM system.mutations WHERE database = '"+db+"' AND NOT is_done") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("mutations not done after a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The migration the warning gives, done as it says (rename, Ensure as a
// start of the collector would, copy, drop), leaves the table with the new
// sorting key, every row, and no warning.
func TestTheMigrationTheWarningGivesWorks(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	conn := connect(t, srv)
	ctx := ctxFor(t)
	o := Options{Database: srv.NewDatabase(t)}
	createV1(t, srv, o.Database)
	lb, log := newLog()
	if err := Check(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	var migrate []string
	for _, w := range lb.with(t, "WARN", "older sorting key") {
		if w["table"] == o.Database+".dns" {
			migrate = strings.Split(w["migrate"].(string), "; ")
		}
	}
	if len(migrate) != 4 || !strings.HasPrefix(migrate[0], "1) RENAME") || migrate[1] != "2) start the collector" ||
		!strings.HasPrefix(migrate[2], "3) INSERT") || !strings.HasPrefix(migrate[3], "4) once the counts agree: DROP") {
		t.Fatalf("migration of dns: %q", migrate)
	}
	srv.Exec(t, strings.TrimPrefix(migrate[0], "1) "))
	if _, err := Ensure(ctx, conn, o, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	srv.Exec(t, strings.TrimPrefix(migrate[2], "3) "))
	srv.Exec(t, strings.TrimPrefix(migrate[3], "4) once the counts agree: "))
	if got := srv.Query(t, "SELECT sorting_key FROM system.tables WHERE database = '"+o.Database+"' AND name = 'dns'"); got != strings.Join(tableOf("dns").SortingKey(), ", ") {
		t.Errorf("sorting key after the migration: %s", got)
	}
	if got := srv.Query(t, "SELECT id, fqdn, host_ip_addr, record_original IS NULL FROM "+o.Database+".dns"); got != "d1\ta.example\t::ffff:192.0.2.1\t1" {
		t.Errorf("rows after the migration: %q", got)
	}
	lb, log = newLog()
	if err := Check(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	for _, w := range lb.with(t, "WARN", "older sorting key") {
		if w["table"] == o.Database+".dns" {
			t.Errorf("still a warning after the migration: %v", w)
		}
	}
}

// A TTL set by hand stays when sink.clickhouse.ttl is off (with a
// warning), and is replaced when it asks for another.
func TestATTLSetByHandIsLeftAloneUnlessTheConfigurationSetsOne(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	conn := connect(t, srv)
	ctx := ctxFor(t)
	o := Options{Database: srv.NewDatabase(t)}
	if _, err := Ensure(ctx, conn, o, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	srv.Exec(t, "ALTER TABLE "+o.Database+".dns MODIFY TTL toDateTime(time) + toIntervalDay(30)")
	lb, log := newLog()
	if _, err := Ensure(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	if w := lb.with(t, "WARN", "TTL that sink.clickhouse.ttl does not ask for"); len(w) != 1 || w[0]["ttl"] != "toDateTime(time) + toIntervalDay(30)" {
		t.Errorf("warnings %v", w)
	}
	o.TTL = 90 * 24 * time.Hour
	if _, err := Ensure(ctx, conn, o, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if got := tableTTL(srv.Query(t, "SELECT engine_full FROM system.tables WHERE database = '"+o.Database+"' AND name = 'dns'")); got != "toDateTime(time) + toIntervalDay(90)" {
		t.Errorf("TTL %q", got)
	}
}

// A cluster the server does not know stops Ensure and Check with an error
// naming the key, before anything is created.
func TestAnUnknownClusterIsAnErrorNamingTheKey(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	conn := connect(t, srv)
	ctx := ctxFor(t)
	o := Options{Database: srv.NewDatabase(t), Cluster: "no_such_cluster"}
	for name, run := range map[string]func() error{
		"Ensure": func() error { _, err := Ensure(ctx, conn, o, time.Minute, nil); return err },
		"Check":  func() error { return Check(ctx, conn, o, time.Minute, nil) },
	} {
		if err := run(); err == nil || !strings.Contains(err.Error(), `sink.clickhouse.cluster: the server does not know cluster "no_such_cluster"`) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := srv.QueryInt(t, "SELECT count() FROM system.tables WHERE database = '"+o.Database+"'"); n != 0 {
		t.Errorf("%d tables created", n)
	}
}

// A codec somebody chose and a column made LowCardinality or not by hand
// are left as they are, with one warning per table naming each column and
// what it keeps; the sink still writes into the table.
func TestColumnsWithAnotherCodecOrTypeAreLeftAloneWithAWarning(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	conn := connect(t, srv)
	ctx := ctxFor(t)
	o := Options{Database: srv.NewDatabase(t)}
	if _, err := Ensure(ctx, conn, o, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	srv.Exec(t, "ALTER TABLE "+o.Database+".dns MODIFY COLUMN fqdn CODEC(LZ4HC(9))")
	srv.Exec(t, "ALTER TABLE "+o.Database+".user_logins MODIFY COLUMN activity_type String")
	for name, run := range map[string]func(*slog.Logger) error{
		"Check":  func(l *slog.Logger) error { return Check(ctx, conn, o, time.Minute, l) },
		"Ensure": func(l *slog.Logger) error { _, err := Ensure(ctx, conn, o, time.Minute, l); return err },
	} {
		lb, log := newLog()
		if err := run(log); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := map[string]string{}
		for _, w := range lb.with(t, "WARN", "keeps column codecs or types") {
			cols, _ := w["columns"].([]any)
			if len(cols) != 1 {
				t.Errorf("%s: warning %v, want one column", name, w)
				continue
			}
			got[w["table"].(string)] = cols[0].(string)
		}
		want := map[string]string{
			o.Database + ".dns":         "fqdn keeps CODEC(LZ4HC(9))",
			o.Database + ".user_logins": "activity_type keeps type String (new tables: LowCardinality(String)",
		}
		if len(got) != len(want) {
			t.Errorf("%s warned about %v, want %v", name, got, want)
		}
		for tbl, prefix := range want {
			if !strings.HasPrefix(got[tbl], prefix) {
				t.Errorf("%s: warning for %s: %q, want it to start with %q", name, tbl, got[tbl], prefix)
			}
		}
		if n := len(lb.with(t, "INFO", "")); n != 0 {
			t.Errorf("%s would change something:\n%s", name, lb.buf.String())
		}
	}
	if got := srv.Query(t, "SELECT compression_codec FROM system.columns WHERE database = '"+o.Database+"' AND table = 'dns' AND name = 'fqdn'"); got != "CODEC(LZ4HC(9))" {
		t.Errorf("fqdn codec changed to %q", got)
	}
	if got := srv.Query(t, "SELECT type FROM system.columns WHERE database = '"+o.Database+"' AND table = 'user_logins' AND name = 'activity_type'"); got != "String" {
		t.Errorf("activity_type type changed to %q", got)
	}
}

// The queries the sorting key serves, a key within a time range and a time
// range alone, reach the primary key through the day: the server's plan
// shows the condition on toDate(time) and on the key, not on the time
// column (which, matched alone, excluded nothing after the key and read
// whole months).
func TestATimeRangeAndAKeyReachThePrimaryKeyThroughTheDay(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	conn := connect(t, srv)
	ctx := ctxFor(t)
	o := Options{Database: srv.NewDatabase(t)}
	if _, err := Ensure(ctx, conn, o, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	for _, spec := range Tables() {
		srv.Exec(t, "INSERT INTO "+o.Database+"."+spec.Source+" (id, account, time) VALUES ('a', 'acme', '2026-09-20 10:00:00'), ('b', 'acme', '2026-09-27 10:00:00')")
		val := "'x'"
		for _, f := range spec.Fields {
			if f.Column == spec.Key && f.Type == typeInt64 {
				val = "7"
			}
		}
		for name, where := range map[string]string{
			"key and time": spec.Key + " = " + val + " AND time >= '2026-09-24 00:00:00' AND time < '2026-10-01 00:00:00'",
			"time alone":   "time >= '2026-09-24 00:00:00' AND time < '2026-10-01 00:00:00'",
		} {
			plan := srv.Query(t, "EXPLAIN indexes = 1 SELECT count() FROM "+o.Database+"."+spec.Source+" WHERE "+where)
			_, pk, ok := strings.Cut(plan, "PrimaryKey")
			if !ok {
				t.Fatalf("%s, %s: no primary key in the plan:\n%s", spec.Source, name, plan)
			}
			cond, _, _ := strings.Cut(pk, "Granules")
			if !strings.Contains(cond, "toDate(time) in") || strings.Contains(cond, "(time in") {
				t.Errorf("%s, %s: the primary key's condition is not on the day:\n%s", spec.Source, name, cond)
			}
			if name == "key and time" && !strings.Contains(cond, "("+spec.Key+" in") {
				t.Errorf("%s, %s: the primary key's condition is not on %s:\n%s", spec.Source, name, spec.Key, cond)
			}
		}
		// A search by a value without a time range uses its bloom filter
		// (the server refuses the query when the index cannot serve it).
		for _, col := range spec.Bloom {
			cond := col + " = 'x'"
			for _, f := range spec.Fields {
				switch {
				case f.Column == col && f.Type == typeInt64:
					cond = col + " = 7"
				case f.Column == col && f.Type == typeIP:
					cond = col + " = '192.0.2.1'"
				}
			}
			for _, c := range spec.Derived {
				if c.Name == col && c.Type == typeIPs {
					cond = "has(" + col + ", toIPv6('192.0.2.1'))"
				}
			}
			srv.Query(t, "SELECT count() FROM "+o.Database+"."+spec.Source+" WHERE "+cond+" SETTINGS force_data_skipping_indices = '"+IndexName(col)+"'")
		}
	}
	// The columns users search (issue 15: ids, user names, FQDNs) have one.
	for src, col := range map[string]string{"dns": "fqdn", "user_logins": "username", "audit_logs": "user_name", "edge_audit_events": "user_login"} {
		if !slices.Contains(tableOf(src).Bloom, col) {
			t.Errorf("%s.%s has no bloom filter", src, col)
		}
	}
	for _, spec := range Tables() {
		if !slices.Contains(spec.Bloom, "id") {
			t.Errorf("%s.id has no bloom filter", spec.Source)
		}
	}
}

// Tables of the previous schema keep IPs and severities as strings: Check
// says that Start will convert each such column and changes nothing;
// Ensure converts them (logging each), and a second Ensure finds nothing
// to do.
func TestThePreviousSchemaStringColumnsAreConvertedToNativeTypes(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	conn := connect(t, srv)
	ctx := ctxFor(t)
	o := Options{Database: srv.NewDatabase(t)}
	for _, src := range []string{"dns", "user_logins", "edge_audit_events", "edge_alerts"} {
		b, err := os.ReadFile(filepath.Join("testdata", "v2", src+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		srv.Exec(t, strings.ReplaceAll(string(b), "`svc`.", "`"+o.Database+"`."))
	}
	types := "SELECT table, name, type FROM system.columns WHERE database = '" + o.Database + "' AND name IN ('host_ip_addr', 'source_ip_addr', 'client_ip', 'severity') AND table NOT LIKE '%latest' ORDER BY table, name"
	before := srv.Query(t, types)
	lb, log := newLog()
	if err := Check(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	if got := srv.Query(t, types); got != before {
		t.Errorf("Check changed the types:\n%s", got)
	}
	if n := len(lb.with(t, "INFO", "start will convert column")); n != 4 {
		t.Errorf("Check said %d times that Start will convert a column, want 4:\n%s", n, lb.buf.String())
	}
	lb, log = newLog()
	if _, err := Ensure(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	want := "dns\thost_ip_addr\tNullable(IPv6)\nedge_alerts\tseverity\tNullable(UInt8)\nedge_audit_events\tclient_ip\tNullable(IPv6)\nuser_logins\tsource_ip_addr\tNullable(IPv6)"
	if got := srv.Query(t, types); got != want {
		t.Errorf("types after Ensure:\n%s\nwant:\n%s", got, want)
	}
	if n := len(lb.with(t, "INFO", "clickhouse column converted in place")); n != 4 {
		t.Errorf("Ensure logged %d conversions, want 4", n)
	}
	lb, log = newLog()
	if _, err := Ensure(ctx, conn, o, time.Minute, log); err != nil {
		t.Fatal(err)
	}
	if n := len(lb.with(t, "INFO", "")); n != 0 {
		t.Errorf("a second Ensure changed something:\n%s", lb.buf.String())
	}
}
