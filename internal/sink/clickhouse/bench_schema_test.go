package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// BenchmarkSchemaBeforeAfter loads the same simulated year of records into
// tables of the first schema (schema/testdata/v1: ORDER BY (account, time,
// id), default codecs, no skip index) and of the current one, and prints,
// per table, the bytes on disk per million records, and the server time and
// rows read of three typical queries on each. Run alone, without -race:
//
//	go test -run '^$' -bench BenchmarkSchemaBeforeAfter -benchtime 1x -timeout 1h ./internal/sink/clickhouse/
//
// SCHEMA_BENCH_SCALE (default 1) scales the row counts: at 1, 2,000,000
// user logins, 2,000,000 DNS records, about 500,000 edge alert versions
// and 250,000 records of each of the six other sources.
// SCHEMA_BENCH_DAYS (default 365) is the span they are spread over: at 365
// one account's day of a source fills less than one granule (8,192 rows),
// so that no sorting key can skip within a day; 35 packs the same rows ten
// times denser, as a busier tenant's year would be. The records go
// through the sink (Write, 16 writers, as the pipeline's sink_workers); the
// first-schema tables get the same rows with INSERT ... SELECT; both are
// merged (OPTIMIZE FINAL) before measuring. The figures measured are in
// docs/clickhouse.md.
func BenchmarkSchemaBeforeAfter(b *testing.B) {
	scale := 1.0
	if s := os.Getenv("SCHEMA_BENCH_SCALE"); s != "" {
		var err error
		if scale, err = strconv.ParseFloat(s, 64); err != nil || scale <= 0 {
			b.Fatalf("SCHEMA_BENCH_SCALE=%q", s)
		}
	}
	days := 365
	if s := os.Getenv("SCHEMA_BENCH_DAYS"); s != "" {
		var err error
		if days, err = strconv.Atoi(s); err != nil || days < 31 {
			b.Fatalf("SCHEMA_BENCH_DAYS=%q: want 31 or more (the queries ask for 30 days)", s)
		}
	}
	counts := map[string]int{"user_logins": 2_000_000, "dns": 2_000_000, "edge_alerts": 100_000}
	for _, src := range schema.Sources() {
		if counts[src] == 0 {
			counts[src] = 250_000
		}
		counts[src] = int(float64(counts[src]) * scale)
	}
	srv := chtest.Get(b)
	newDB, oldDB := srv.NewDatabase(b), srv.NewDatabase(b)
	cfg := testConfig(srv, ProtocolNative, newDB)
	cfg.FlushInterval = 200 * time.Millisecond
	s, _ := startSink(b, cfg)

	end := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	sim := newYearSim(end, time.Duration(days)*24*time.Hour)
	loadStart := time.Now()
	total := 0
	for _, src := range schema.Sources() {
		n := sim.load(b, s, src, counts[src])
		total += n
		b.Logf("%s: %d records written", src, n)
	}
	b.Logf("%d records through the sink in %v", total, time.Since(loadStart).Round(time.Second))

	for _, src := range append(schema.Sources(), "edge_alerts"+schema.ViewSuffix) {
		ddl, err := os.ReadFile(filepath.Join("schema", "testdata", "v1", src+".sql"))
		if err != nil {
			b.Fatal(err)
		}
		srv.Exec(b, strings.ReplaceAll(string(ddl), "`svc`.", "`"+oldDB+"`."))
	}
	for _, spec := range schema.Tables() {
		var cols []string
		for _, c := range spec.Columns() {
			if c.Name != "record_original" {
				cols = append(cols, c.Name)
			}
		}
		list := strings.Join(cols, ", ")
		srv.Exec(b, fmt.Sprintf("INSERT INTO %s.%s (%s) SELECT %s FROM %s.%s", oldDB, spec.Source, list, list, newDB, spec.Source))
	}
	for _, db := range []string{oldDB, newDB} {
		for _, src := range schema.Sources() {
			srv.Exec(b, "OPTIMIZE TABLE "+db+"."+src+" FINAL")
		}
	}
	waitMerges(b, srv, oldDB, newDB)

	oldSize, newSize := tableSizes(b, srv, oldDB), tableSizes(b, srv, newDB)
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-18s %10s | %14s %14s | %14s %14s %7s\n", "table", "rows", "v1 compressed", "v1 on disk", "compressed", "on disk", "disk")
	fmt.Fprintf(&report, "%-18s %10s | %14s %14s | %14s %14s %7s\n", "", "", "MB/M rows", "MB/M rows", "MB/M rows", "MB/M rows", "new/v1")
	var oldAll, newAll partSize
	for _, src := range schema.Sources() {
		o, n := oldSize[src], newSize[src]
		if o.rows != n.rows {
			b.Errorf("%s: %d rows in the first-schema table, %d in the new one", src, o.rows, n.rows)
		}
		fmt.Fprintf(&report, "%-18s %10d | %14.1f %14.1f | %14.1f %14.1f %7.2f\n", src, n.rows,
			o.perMillion(o.compressed), o.perMillion(o.onDisk), n.perMillion(n.compressed), n.perMillion(n.onDisk), float64(n.onDisk)/float64(o.onDisk))
		oldAll.add(o)
		newAll.add(n)
	}
	fmt.Fprintf(&report, "%-18s %10d | %14.1f %14.1f | %14.1f %14.1f %7.2f\n", "all", newAll.rows,
		oldAll.perMillion(oldAll.compressed), oldAll.perMillion(oldAll.onDisk), newAll.perMillion(newAll.compressed), newAll.perMillion(newAll.onDisk),
		float64(newAll.onDisk)/float64(oldAll.onDisk))
	fmt.Fprintf(&report, "(new on disk includes %.1f MB/M rows of skip indexes)\n", newAll.perMillion(newAll.indexes))

	user, fqdn := sim.users[sim.queryUser], sim.fqdns[sim.queryFQDN]
	queries := []struct{ name, sql string }{
		{"one user's logins over 30 days", fmt.Sprintf("SELECT time, mid, activity_type, source_ip_addr FROM %%s.user_logins WHERE username = '%s' AND time >= '%s' AND time < '%s' ORDER BY time, id",
			user, end.Add(-30*24*time.Hour).Format(time.DateTime), end.Format(time.DateTime))},
		{"one FQDN's DNS over 7 days", fmt.Sprintf("SELECT time, mid, host_ip_addr FROM %%s.dns WHERE fqdn = '%s' AND time >= '%s' AND time < '%s' ORDER BY time, id",
			fqdn, end.Add(-7*24*time.Hour).Format(time.DateTime), end.Format(time.DateTime))},
		{"the latest state of alerts", "SELECT status, severity, count() FROM %s.edge_alerts_latest GROUP BY status, severity ORDER BY status, severity"},
	}
	fmt.Fprintf(&report, "\n%-32s | %10s %12s %10s | %10s %12s %10s | %6s\n", "query (median of 7 runs)", "v1 ms", "rows read", "MB read", "new ms", "rows read", "MB read", "result")
	for _, q := range queries {
		o := runQuery(b, srv, fmt.Sprintf(q.sql, oldDB))
		n := runQuery(b, srv, fmt.Sprintf(q.sql, newDB))
		if o.result != n.result {
			b.Errorf("%s: the two schemas answer differently:\nv1:\n%.500s\nnew:\n%.500s", q.name, o.result, n.result)
		}
		fmt.Fprintf(&report, "%-32s | %10.1f %12d %10.1f | %10.1f %12d %10.1f | %6d\n", q.name,
			o.ms, o.readRows, float64(o.readBytes)/1e6, n.ms, n.readRows, float64(n.readBytes)/1e6, strings.Count(n.result, "\n"))
		b.ReportMetric(n.ms, "ms/"+strings.ReplaceAll(strings.Fields(q.name)[2], "'s", ""))
	}
	fmt.Fprintf(&report, "(user %s: %d logins in all; FQDN %s: %d DNS records in all)\n",
		user, srv.QueryInt(b, "SELECT count() FROM "+newDB+".user_logins WHERE username = '"+user+"'"),
		fqdn, srv.QueryInt(b, "SELECT count() FROM "+newDB+".dns WHERE fqdn = '"+fqdn+"'"))
	b.ReportMetric(newAll.perMillion(newAll.onDisk), "MB-on-disk/M-rows")
	b.ReportMetric(oldAll.perMillion(oldAll.onDisk), "v1-MB-on-disk/M-rows")
	fmt.Println(report.String()) // whole: b.Log cuts a benchmark's log at ten lines
}

// partSize is what system.parts says of a table's active parts.
type partSize struct{ rows, compressed, onDisk, indexes int64 }

func (p *partSize) add(q partSize) {
	p.rows += q.rows
	p.compressed += q.compressed
	p.onDisk += q.onDisk
	p.indexes += q.indexes
}

// perMillion is bytes in MB per million rows.
func (p partSize) perMillion(bytes int64) float64 { return float64(bytes) / float64(p.rows) }

func tableSizes(b *testing.B, srv *chtest.Server, db string) map[string]partSize {
	out := map[string]partSize{}
	rows := srv.Query(b, "SELECT table, sum(rows), sum(data_compressed_bytes), sum(bytes_on_disk), sum(secondary_indices_compressed_bytes) FROM system.parts WHERE database = '"+db+"' AND active GROUP BY table FORMAT TSV")
	for _, line := range strings.Split(rows, "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		var p partSize
		p.rows, _ = strconv.ParseInt(f[1], 10, 64)
		p.compressed, _ = strconv.ParseInt(f[2], 10, 64)
		p.onDisk, _ = strconv.ParseInt(f[3], 10, 64)
		p.indexes, _ = strconv.ParseInt(f[4], 10, 64)
		out[f[0]] = p
	}
	return out
}

// waitMerges waits until the OPTIMIZE FINALs are done: no merge running
// in the databases.
func waitMerges(b *testing.B, srv *chtest.Server, dbs ...string) {
	q := "SELECT count() FROM system.merges WHERE database IN ('" + strings.Join(dbs, "','") + "')"
	deadline := time.Now().Add(30 * time.Minute)
	for srv.QueryInt(b, q) > 0 {
		if time.Now().After(deadline) {
			b.Fatal("merges still running after 30 minutes")
		}
		time.Sleep(time.Second)
	}
}

type queryRun struct {
	ms                  float64 // server elapsed, median
	readRows, readBytes int64
	result              string
}

// runQuery runs sql seven times over HTTP (after one warm-up) and returns
// the median of the server's elapsed time, the rows and bytes it read, and
// the result.
func runQuery(b *testing.B, srv *chtest.Server, sql string) queryRun {
	var times []float64
	var run queryRun
	for i := range 8 {
		req, err := http.NewRequest(http.MethodPost, "http://"+srv.HTTP+"/?use_query_cache=0", strings.NewReader(sql))
		if err != nil {
			b.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: HTTP %d %s %v", sql, resp.StatusCode, body, err)
		}
		var sum struct {
			ReadRows  string `json:"read_rows"`
			ReadBytes string `json:"read_bytes"`
			Elapsed   string `json:"elapsed_ns"`
		}
		if err := json.Unmarshal([]byte(resp.Header.Get("X-ClickHouse-Summary")), &sum); err != nil {
			b.Fatalf("summary %q: %v", resp.Header.Get("X-ClickHouse-Summary"), err)
		}
		run.result = string(body)
		run.readRows, _ = strconv.ParseInt(sum.ReadRows, 10, 64)
		run.readBytes, _ = strconv.ParseInt(sum.ReadBytes, 10, 64)
		ns, _ := strconv.ParseFloat(sum.Elapsed, 64)
		if i > 0 {
			times = append(times, ns/1e6)
		}
	}
	sort.Float64s(times)
	run.ms = times[len(times)/2]
	return run
}

// yearSim makes records of a year shaped like the API's, with the
// repetition real data has: 20,000 user names and 200,000 FQDNs drawn with
// Zipf's law (a few are everywhere, most are rare), 3,000 machines, a few
// source IPs per user, a few addresses per FQDN, alerts with one to nine
// versions each. Other sources use the test generator (fixtures_test.go).
type yearSim struct {
	end       time.Time
	span      time.Duration
	users     []string
	fqdns     []string
	queryUser int // rank of the user and FQDN the queries ask for:
	queryFQDN int // common enough to have records in the range
}

func newYearSim(end time.Time, span time.Duration) *yearSim {
	y := &yearSim{end: end, span: span, queryUser: 100, queryFQDN: 100}
	r := rand.New(rand.NewPCG(1, 2))
	first := []string{"anna", "ben", "chen", "dario", "eva", "farid", "gita", "hugo", "ines", "jon", "kim", "lea", "mo", "nora", "otto", "pia"}
	for i := range 20_000 {
		y.users = append(y.users, fmt.Sprintf("%s.%s%d", first[r.IntN(len(first))], strings.ToLower(first[r.IntN(len(first))]), i))
	}
	words := []string{"api", "cdn", "login", "static", "img", "mail", "update", "telemetry", "sync", "auth"}
	tlds := []string{"com", "net", "io", "de", "ch", "example"}
	for i := range 200_000 {
		y.fqdns = append(y.fqdns, fmt.Sprintf("%s%d.%s-%x.%s", words[r.IntN(len(words))], r.IntN(20), words[r.IntN(len(words))], i, tlds[r.IntN(len(tlds))]))
	}
	return y
}

func hashIP(s string, k int) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", s, k)
	v := h.Sum64()
	return fmt.Sprintf("%d.%d.%d.%d", 11+v%200, v>>8&255, v>>16&255, 1+v>>24%254)
}

// load writes n records of src to s: two accounts (70% and 30%), each in
// time order over the year, in pages of at most 5,000 records of one-day
// windows,
// by 16 writers. It returns how many records it wrote.
func (y *yearSim) load(b *testing.B, s *Sink, src string, n int) int {
	pages := make(chan *record.Batch, 32)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for p := range pages {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				err := s.Write(ctx, p)
				cancel()
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	written := 0
	for ai, acct := range []string{"acme", "acme-dev"} {
		share := n * 7 / 10
		if ai == 1 {
			share = n - share
		}
		written += y.stream(b, src, acct, share, uint64(ai), pages)
	}
	close(pages)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return written
}

// stream makes one account's records of src and sends them in pages.
func (y *yearSim) stream(b *testing.B, src, acct string, n int, seed uint64, pages chan<- *record.Batch) int {
	r := rand.New(rand.NewPCG(seed, uint64(len(src))))
	userZipf := rand.NewZipf(r, 1.07, 2, uint64(len(y.users)-1))
	fqdnZipf := rand.NewZipf(r, 1.1, 2, uint64(len(y.fqdns)-1))
	fixture := newGen(src, seed)
	start := y.end.Add(-y.span)
	var bl record.Builder
	tf := timeFields()[src]
	var page []record.Envelope
	flush := func() {
		if len(page) > 0 {
			pages <- batchOf(src, acct, page, 0)
			page = nil
		}
	}
	count := 0
	var winStart time.Time
	add := func(t time.Time, raw []byte) {
		ws := t.Truncate(24 * time.Hour)
		if ws != winStart || len(page) == 5000 {
			flush()
			winStart = ws
		}
		we := ws.Add(24 * time.Hour)
		fetched := we.Add(time.Duration(5+r.IntN(120)) * time.Second)
		e, flaw := bl.Build(src, acct, tf, ws, we, fetched, raw)
		if flaw != 0 {
			b.Fatalf("%s record %s: %v", src, raw, flaw)
		}
		page = append(page, e)
		count++
	}
	if src == "edge_alerts" {
		// n alerts, each with its versions.
		for i := range n {
			created := start.Add(time.Duration(float64(y.span) * (float64(i) + r.Float64()) / float64(n))).Truncate(time.Millisecond)
			uuid := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
			updated := created
			statuses := []string{"OPEN", "IN_PROGRESS", "CLOSED"}
			versions := 1 + r.IntN(9)
			for v := range versions {
				updated = updated.Add(time.Duration(1+r.IntN(600)) * time.Minute)
				st := statuses[min(v*3/versions, 2)]
				if v == versions-1 && r.IntN(3) > 0 {
					st = "CLOSED"
				}
				add(created, fixture.alert(created, uuid, updated, st).raw)
			}
		}
		flush()
		return count
	}
	for i := range n {
		t := start.Add(time.Duration(float64(y.span) * (float64(i) + r.Float64()) / float64(n))).Truncate(time.Millisecond)
		var raw []byte
		switch src {
		case "user_logins":
			u := int(userZipf.Uint64())
			raw = render([]member{
				{"createdTime", iso(t)}, {"mid", 1000 + r.IntN(3000)}, {"activityTime", iso(t.Add(-time.Duration(r.IntN(120000)) * time.Millisecond))},
				{"activityType", []string{"LOGIN", "LOGOFF"}[r.IntN(2)]}, {"username", y.users[u]}, {"uid", 1000 + u},
				{"sourceIpAddr", hashIP(y.users[u], r.IntN(3))},
			})
		case "dns":
			f := int(fqdnZipf.Uint64())
			raw = render([]member{
				{"createdTime", iso(t)}, {"mid", 1000 + r.IntN(3000)}, {"fqdn", y.fqdns[f]},
				{"hostIpAddr", hashIP(y.fqdns[f], r.IntN(4))}, {"ttl", []int{30, 60, 300, 3600, 86400}[r.IntN(5)]},
				{"dnsServerIp", []string{"10.0.0.2", "1.1.1.1", "8.8.8.8"}[r.IntN(3)]},
			})
		default:
			raw = fixture.record(t).raw
		}
		add(t, raw)
	}
	flush()
	return count
}
