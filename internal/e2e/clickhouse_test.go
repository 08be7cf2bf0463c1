package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/harness/chharness"
)

// The collector binary against the simulator into a real ClickHouse (26.x,
// from internal/testinfra/chtest): one fresh database per test, tables read
// back and compared with /_truth per (source, account, UTC day) (C7, C8).

// "collector run --once", nine sources of two accounts, over the native and
// the HTTP protocol: complete and exact per truth, one row per record (even
// without FINAL), typed columns as the raw record says, the raw record as
// the API served it byte for byte, and the edge_alerts_latest view.
func TestClickHouseEndToEndMatchesTruth(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	for _, c := range []struct {
		proto string
		hours int
		min   int64
	}{
		{"native", 48, 180_000},
		{"http", 24, 80_000},
	} {
		t.Run(c.proto, func(t *testing.T) {
			t.Parallel()
			db := srv.NewDatabase(t)
			sim := harness.StartSim(t, harness.QuickRates)
			start := time.Now().UTC().Add(-time.Duration(c.hours) * time.Hour).Truncate(time.Minute)
			col := harness.New(t, harness.Config{Sim: sim, Start: start, Sink: chharness.SinkYAML(chharness.Addr(srv, c.proto), c.proto, db)})
			began, restarts := time.Now(), srv.Restarts()
			logs := col.RunOnce(t, 4*time.Minute).Logs
			ended := time.Now()
			if !strings.Contains(logs, `"protocol":"`+c.proto+`"`) || !strings.Contains(logs, "clickhouse sink started") {
				t.Fatalf("the collector did not start the ClickHouse sink over %s:\n%s", c.proto, harness.Tail(logs, 20))
			}
			chharness.NoFailedWrites(t, srv, restarts, logs, "clickhouse insert failed", "sink write failed")

			conn := chharness.Open(t, srv)
			res := chharness.Verify(t, srv, conn, sim, db, chharness.VerifyOpts{
				From: start, Wms: col.Watermarks(t), Streams: harness.AllStreams(),
				FetchedFrom: began, FetchedTo: ended, ExactRows: true,
			})
			if res.Distinct < c.min {
				t.Fatalf("only %d records compared; the test data is too thin to mean much", res.Distinct)
			}

			// The raw record is the API's bytes, not a re-encoding: fetch
			// windows of user_logins (non-ASCII names, \u escapes, +0000
			// offsets) and changed_files (paths, escaped slashes) as a
			// client would and compare byte for byte.
			for _, w := range []struct {
				source, path string
				hours        time.Duration
			}{
				{"user_logins", "/api/v2/Activities/UserLogins/search", 3},
				{"changed_files", "/api/v2/Activities/ChangedFiles/search", 1},
			} {
				ws, we := start.Add(time.Hour), start.Add((1+w.hours)*time.Hour)
				served := harness.APIRecords(t, sim, w.path, "acme", ws, we)
				stored := chharness.StoredRecords(t, srv, conn, db, w.source, "acme", ws, we)
				if len(served) < 100 || len(stored) != len(served) {
					t.Errorf("%s/acme [%s, %s): the API serves %d records, the table holds %d", w.source, ws, we, len(served), len(stored))
				}
				bad := 0
				for _, raw := range served {
					id, err := record.ID(w.source, raw)
					if err != nil {
						t.Fatal(err)
					}
					if got, ok := stored[id]; !ok || !bytes.Equal(got, raw) {
						if bad++; bad <= 3 {
							t.Errorf("%s record %s: stored %s, the API served %s", w.source, id, got, raw)
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d records not stored byte for byte", w.source, bad, len(served))
				}
			}

			chharness.CheckLatestAlerts(t, srv, db)
			t.Logf("%s: %d records in %d rows; run %v, %d rows typed-checked", c.proto, res.Distinct, res.Rows,
				ended.Sub(began).Round(time.Millisecond), res.TypedRows())
		})
	}
}

// A connection cut after the server received an insert's data (the client
// never hears whether it was stored), four times during a backfill: the
// sink repeats the same insert with the same token, nothing is lost, and
// nothing is stored twice, not even before a merge.
func TestClickHouseInsertCutAfterSendIsRepeatedAndStoredOnce(t *testing.T) {
	t.Parallel()
	// A server of its own: DuplicatedInsertedBlocks counts the whole
	// server's repeats (another test's would hide one this test failed to
	// drop), and the cuts are the roughest thing any test does to the engine.
	srv := chtest.Start(t)
	const cuts = 4
	for _, proto := range []string{"native", "http"} {
		t.Run(proto, func(t *testing.T) {
			db := srv.NewDatabase(t)
			sim := harness.StartSim(t, harness.QuickRates)
			proxy := chharness.NewCutProxy(t, chharness.Addr(srv, proto), 32<<10, cuts)
			start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
			// Four cuts may hit one insert in a row: let it have more tries
			// than that, so the token (not FINAL) must make it exact.
			c := harness.New(t, harness.Config{Sim: sim, Start: start, Sink: chharness.SinkYAML(proxy.Addr(), proto, db),
				Env: []string{"COLLECTOR_SINK__CLICKHOUSE__INSERT_ATTEMPTS=8"}})
			dup0 := chharness.DuplicatedBlocks(t, srv)
			logs := c.RunOnce(t, 4*time.Minute).Logs
			if got := proxy.Cuts(); got != cuts {
				t.Fatalf("the proxy cut %d inserts, want %d: the test did not test anything\n%s", got, cuts, harness.Tail(logs, 20))
			}
			if n := strings.Count(logs, "clickhouse insert failed; repeating the same insert"); n < cuts {
				t.Errorf("the sink repeated %d inserts after %d cuts\n%s", n, cuts, harness.Tail(logs, 30))
			}
			conn := chharness.Open(t, srv)
			res := chharness.Verify(t, srv, conn, sim, db, chharness.VerifyOpts{
				From: start, Wms: c.Watermarks(t), Streams: harness.AllStreams(), ExactRows: true,
			})
			dedup := chharness.DuplicatedBlocks(t, srv) - dup0
			// Over HTTP the server answers only once the insert is stored:
			// every repeat must have been dropped by its token.
			if proto == "http" && dedup < cuts {
				t.Errorf("DuplicatedInsertedBlocks grew by %d after %d cut inserts, want at least %d", dedup, cuts, cuts)
			}
			t.Logf("%s: %d records, %d cuts, %d repeated blocks dropped by their token", proto, res.Distinct, cuts, dedup)
		})
	}
}

// The server killed (SIGKILL) in the middle of a backfill and started again
// on the same data 2s later: the collector keeps retrying, finishes, and
// the tables hold every record once after FINAL.
func TestClickHouseServerKilledDuringBackfillLosesNothing(t *testing.T) {
	t.Parallel()
	srv := chtest.Start(t)
	db := srv.NewDatabase(t)
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sink: chharness.SinkYAML(srv.Native, "native", db),
		Env: []string{"COLLECTOR_SINK__CLICKHOUSE__DIAL_TIMEOUT=1s", "COLLECTOR_SINK__CLICKHOUSE__QUERY_TIMEOUT=10s",
			"COLLECTOR_PIPELINE__RETRY_MAX=2s"}})
	p := c.Start(t, "--once")
	deadline := time.Now().Add(time.Minute)
	var before int64
	for before < 20_000 {
		select {
		case <-p.Exited():
			t.Fatalf("collector ended (%v) before the kill; backfill too small\n%s", p.Err(), p.Tail(20))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rows after a minute\n%s", p.Tail(20))
		}
		before = chharness.CountRows(t, srv, db, harness.AllSources())
	}
	srv.Kill(t)
	time.Sleep(2 * time.Second)
	srv.Restart(t)
	if err := p.Wait(t, 4*time.Minute); err != nil {
		t.Fatalf("collector --once across the server restart: %v\n%s", err, p.Tail(30))
	}
	logs := p.Logs()
	failed := strings.Count(logs, "clickhouse insert failed")
	if failed == 0 {
		t.Fatalf("no insert failed: the kill missed the inserts\n%s", harness.Tail(logs, 30))
	}
	conn := chharness.Open(t, srv)
	res := chharness.Verify(t, srv, conn, sim, db, chharness.VerifyOpts{From: start, Wms: c.Watermarks(t), Streams: harness.AllStreams()})
	t.Logf("%d rows stored before the kill; %d failed insert attempts; %d records in %d rows after", before, failed, res.Distinct, res.Rows)
}

// Tables of an older schema (columns missing, account a plain String, no
// deduplication window, a row of their own) exist before the collector
// starts: it adds the columns and turns deduplication on, the data is
// complete per truth, new rows fill the new columns, the old row reads the
// defaults. Over both protocols (HTTP inserts carry the column types found).
func TestClickHouseAddsTheColumnsAnOlderSchemaLacks(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	for _, proto := range []string{"native", "http"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			db := srv.NewDatabase(t)
			sim := harness.StartSim(t, harness.QuickRates)
			start := time.Now().UTC().Add(-8 * time.Hour).Truncate(time.Minute)
			old := time.Now().UTC().Add(-40 * 24 * time.Hour).Truncate(time.Hour)
			oldDNS := `{"createdTime":"` + old.Format("2006-01-02T15:04:05.000Z") + `","mid":7,"fqdn":"old.example.com"}`
			oldAlert := fmt.Sprintf(`{"create_time":%d,"uuid":"old-alert","status":"OPEN","update_time":%d}`, old.UnixMilli(), old.UnixMilli())
			oldDNSID, _ := record.ID("dns", []byte(oldDNS))
			oldAlertID, _ := record.ID("edge_alerts", []byte(oldAlert))
			ts := old.Format("2006-01-02 15:04:05")
			srv.Exec(t, `CREATE TABLE `+db+`.dns (id String, account String, time DateTime64(3, 'UTC'),
				window_start DateTime64(3, 'UTC'), fetched_at DateTime64(3, 'UTC'), record String, mid Int64)
				ENGINE = ReplacingMergeTree(fetched_at) PARTITION BY toYYYYMM(time) ORDER BY (account, time, id)`)
			srv.Exec(t, fmt.Sprintf(`INSERT INTO %s.dns (id, account, time, window_start, fetched_at, record, mid)
				VALUES ('%s', 'acme', '%s', '%s', '%s', '%s', 7)`, db, oldDNSID, ts, ts, ts, oldDNS))
			srv.Exec(t, `CREATE TABLE `+db+`.edge_alerts (id String, account LowCardinality(String), time DateTime64(3, 'UTC'),
				window_start DateTime64(3, 'UTC'), window_end DateTime64(3, 'UTC'), fetched_at DateTime64(3, 'UTC'),
				record String CODEC(ZSTD(1)), uuid String, status LowCardinality(String))
				ENGINE = ReplacingMergeTree(fetched_at) PARTITION BY toYYYYMM(time) ORDER BY (account, time, id)`)
			srv.Exec(t, fmt.Sprintf(`INSERT INTO %s.edge_alerts (id, account, time, window_start, window_end, fetched_at, record, uuid, status)
				VALUES ('%s', 'acme', '%s', '%s', '%s', '%s', '%s', 'old-alert', 'OPEN')`, db, oldAlertID, ts, ts, ts, ts, oldAlert))

			srcs := []string{"dns", "edge_alerts", "connections"}
			c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: srcs, Sink: chharness.SinkYAML(chharness.Addr(srv, proto), proto, db, "ttl: 400d")})
			logs := c.RunOnce(t, 3*time.Minute).Logs
			for _, col := range []string{"window_end", "fqdn", "host_ip_addr", "incident_status", "event_type", "update_time", "severity"} {
				if !strings.Contains(logs, `"column":"`+col+`"`) {
					t.Errorf("no log of column %s added", col)
				}
			}
			for _, table := range []string{"dns", "edge_alerts"} {
				ddl := srv.Query(t, "SHOW CREATE TABLE "+db+"."+table)
				if !strings.Contains(ddl, "non_replicated_deduplication_window = 1000") {
					t.Errorf("%s: insert deduplication not turned on:\n%s", table, ddl)
				}
				// What can be changed in place is (TTL, skip indexes), and
				// logged; the sorting key cannot, and a warning names the
				// table and says how to migrate it.
				if !strings.Contains(ddl, "TTL toDateTime(time) + toIntervalDay(400)") || !strings.Contains(ddl, "INDEX bf_id id TYPE bloom_filter(0.01)") {
					t.Errorf("%s: no TTL or no bloom filter on id after the start:\n%s", table, ddl)
				}
				// The tenant column is appended to the key (issue 32),
				// the rest stays.
				if !strings.Contains(ddl, "ORDER BY (account, time, id, tenant)") {
					t.Errorf("%s: sorting key not the older one with the tenant appended:\n%s", table, ddl)
				}
				for _, msg := range []string{"clickhouse TTL set", "clickhouse skip indexes added"} {
					if !logLineWith(logs, msg, `"table":"`+table+`"`) {
						t.Errorf("no log %q naming %s", msg, table)
					}
				}
				if !logLineWith(logs, "clickhouse table keeps its older sorting key", `"table":"`+db+`.`+table+`","sorting_key":"account, time, id, tenant"`, `"migrate":"1) RENAME TABLE`) {
					t.Errorf("the sorting key warning does not name %s.%s and its key:\n%s", db, table, logs)
				}
			}
			if ddl := srv.Query(t, "SHOW CREATE TABLE "+db+".connections"); !strings.Contains(ddl, "TTL toDateTime(time) + toIntervalDay(400)") {
				t.Errorf("connections, created by the run, has no TTL:\n%s", ddl)
			}
			conn := chharness.Open(t, srv)
			res := chharness.Verify(t, srv, conn, sim, db, chharness.VerifyOpts{
				From: start, Wms: c.Watermarks(t), Streams: harness.Streams(srcs, harness.Accounts()),
				Skip: map[string]bool{oldDNSID: true, oldAlertID: true}, Sample: 8, ExactRows: true,
			})
			// Every new row has the added columns filled; the old rows read
			// the defaults.
			newDNS := srv.Query(t, fmt.Sprintf(`SELECT count(), countIf(fqdn = ''), countIf(host_ip_addr IS NULL), countIf(window_end <= time)
				FROM %s.dns WHERE id != '%s'`, db, oldDNSID))
			if f := strings.Fields(newDNS); len(f) != 4 || f[0] == "0" || f[1] != "0" || f[2] != "0" || f[3] != "0" {
				t.Errorf("new dns rows: count, empty fqdn, NULL host_ip_addr, window_end <= time = %s", newDNS)
			}
			newAlerts := srv.Query(t, fmt.Sprintf(`SELECT count(), countIf(severity IS NULL), countIf(event_type = ''), countIf(update_time < time)
				FROM %s.edge_alerts WHERE id != '%s'`, db, oldAlertID))
			if f := strings.Fields(newAlerts); len(f) != 4 || f[0] == "0" || f[1] != "0" || f[2] != "0" || f[3] != "0" {
				t.Errorf("new edge_alerts rows: count, NULL severity, empty event_type, update_time < time = %s", newAlerts)
			}
			if got := srv.Query(t, fmt.Sprintf(`SELECT mid, fqdn, host_ip_addr, toUnixTimestamp64Milli(window_end) FROM %s.dns WHERE id = '%s'`, db, oldDNSID)); got != "7\t\t\\N\t0" {
				t.Errorf("old dns row: %q, want mid 7 and defaults", got)
			}
			if got := srv.Query(t, fmt.Sprintf(`SELECT status, severity, toUnixTimestamp64Milli(update_time) FROM %s.edge_alerts_latest WHERE uuid = 'old-alert'`, db)); got != "OPEN\t\\N\t0" {
				t.Errorf("old alert in edge_alerts_latest: %q", got)
			}
			t.Logf("%s: %d records after the schema was completed", proto, res.Distinct)
		})
	}
}

// SIGKILL of the collector at random moments of a ClickHouse backfill,
// eight times, restarting each time, then a run to the end: complete per
// truth, one row per record after FINAL, duplicates only from pages in
// flight.
//
// Over HTTP: the test server (chdb 26.7.2.1 behind cmd/chserver) aborts
// (SIGABRT in a TCPHandler thread) when a native-protocol client dies in the
// middle of an insert, and from then on answers every query with "Code:
// 236 ... shutting down due to a fatal error". Its HTTP handler survives the
// same kills. A client dying mid-insert is routine for a production server.
func TestClickHouseSIGKILLsDuringBackfillLoseNothing(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Minute)
	// Smaller, more frequent inserts: rows come sooner after each start,
	// and more kills land in the middle of one.
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sink: chharness.SinkYAML(srv.HTTP, "http", db),
		Env: []string{"COLLECTOR_SINK__CLICKHOUSE__FLUSH_INTERVAL=200ms"}})
	rng := rand.New(rand.NewPCG(8, 8))
	const kills = 8
	var progress []int64
	stored := int64(0)
	for i := 0; i < kills; i++ {
		p := c.Start(t, "--once")
		// Kill while inserts are under way: at a random moment up to
		// 600ms after this run's first rows arrived.
		deadline := time.Now().Add(time.Minute)
		for chharness.CountRows(t, srv, db, harness.AllSources()) <= stored {
			select {
			case <-p.Exited():
				t.Fatalf("run %d ended by itself before the kill (%v): backfill too small for the test\n%s", i, p.Err(), p.Tail(20))
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d stored nothing within a minute\n%s", i, p.Tail(20))
			}
		}
		p.KillAfter(t, time.Duration(rng.IntN(600))*time.Millisecond, fmt.Sprintf("run %d", i))
		stored = chharness.CountRows(t, srv, db, harness.AllSources())
		progress = append(progress, stored)
	}
	c.RunOnce(t, 4*time.Minute)
	conn := chharness.Open(t, srv)
	res := chharness.Verify(t, srv, conn, sim, db, chharness.VerifyOpts{From: start, Wms: c.Watermarks(t), Streams: harness.AllStreams()})
	dup := res.Rows - res.Uniq
	// A kill repeats at most what was fetched and not committed: the buffer
	// (100,000 records) and the pages being written.
	if limit := int64(kills * 200_000); dup > limit {
		t.Errorf("%d duplicate rows after %d kills: more than pages in flight (%d)", dup, kills, limit)
	}
	t.Logf("%d records complete after %d SIGKILLs (rows stored after each kill: %v); %d duplicate rows before FINAL", res.Distinct, kills, progress, dup)
}

// BenchmarkClickHouseEndToEnd runs the collector binary ("run --once") on a
// fixed backlog of about 500,000 records (connections, dns and
// changed_files of one account, no rate limit to speak of) into a fresh
// database, over both protocols and three batch_rows. It reports rows per
// second of wall time, the collector's CPU seconds per million rows
// (fetching, ids and inserts: user+system of the process), the server's
// when chtest started it, and the in-process simulator's.
//
//	go test -run '^$' -bench BenchmarkClickHouseEndToEnd -benchtime 1x ./internal/e2e/
func BenchmarkClickHouseEndToEnd(b *testing.B) {
	srv := chtest.Get(b)
	for _, proto := range []string{"native", "http"} {
		for _, rows := range []int{2_000, 5_000, 10_000, 50_000, 100_000} {
			b.Run(fmt.Sprintf("%s/%dk", proto, rows/1000), func(b *testing.B) {
				var wall, collector time.Duration
				var server, simTicks, rss int64
				var total int64
				for range b.N {
					r := chBenchOnce(b, srv, proto, rows)
					total += r.rows
					wall += r.wall
					collector += r.cpu
					server += r.serverTicks
					simTicks += r.simTicks
					rss = max(rss, r.maxRSSKB)
				}
				mrows := float64(total) / 1e6
				b.ReportMetric(float64(total)/wall.Seconds(), "rows/s")
				b.ReportMetric(collector.Seconds()/mrows, "collector-cpu-s/Mrows")
				if server > 0 {
					b.ReportMetric(float64(server)/harness.TicksPerSecond/mrows, "server-cpu-s/Mrows")
				}
				b.ReportMetric(float64(simTicks)/harness.TicksPerSecond/mrows, "sim-cpu-s/Mrows")
				b.ReportMetric(float64(total)/float64(b.N), "rows/op")
				b.ReportMetric(float64(rss)/1024, "collector-maxrss-MB")
			})
		}
	}
}

// benchEnv is the environment $BENCH_COLLECTOR_ENV adds to the collector
// of a benchmark (KEY=VALUE, separated by spaces), to measure settings:
// BENCH_COLLECTOR_ENV="COLLECTOR_PIPELINE__BUFFER_RECORDS=20000 GOMEMLIMIT=120MiB".
func benchEnv() []string { return strings.Fields(os.Getenv("BENCH_COLLECTOR_ENV")) }

// chBenchResult is one backfill of the benchmark.
type chBenchResult struct {
	rows                  int64         // rows stored
	wall, cpu             time.Duration // of the collector process
	serverTicks, simTicks int64         // CPU of the server and of this process (the simulator)
	maxRSSKB              int64         // the collector's peak RSS
}

// chBenchOnce runs one backfill.
func chBenchOnce(b *testing.B, srv *chtest.Server, proto string, batchRows int) chBenchResult {
	b.StopTimer()
	sim := harness.StartSim(b, benchSimConfig)
	defer sim.Close()
	db := srv.NewDatabase(b)
	sources := []string{"connections", "dns", "changed_files"}
	// 150,000 records an hour: 200 minutes are 500,000.
	start := time.Now().UTC().Add(-200*time.Minute - 2*time.Minute).Truncate(time.Minute)
	c := harness.New(b, harness.Config{Sim: sim, Start: start, Accounts: []string{"acme"}, Sources: sources, Interval: harness.Omit,
		Rate: harness.Rate{Limit: 100_000}, LogLevel: "warn", Env: benchEnv(),
		Sink: chharness.SinkYAML(chharness.Addr(srv, proto), proto, db, fmt.Sprintf("batch_rows: %d", batchRows))})
	pid := srv.PID()
	s0, _ := harness.CPUTicks(pid)
	m0, _ := harness.CPUTicks(os.Getpid())
	b.StartTimer()
	run := c.RunOnce(b, 10*time.Minute)
	b.StopTimer()
	s1, _ := harness.CPUTicks(pid)
	m1, _ := harness.CPUTicks(os.Getpid())
	var n int64
	for _, src := range sources {
		n += srv.QueryInt(b, fmt.Sprintf("SELECT count() FROM %s.%s FINAL", db, src))
	}
	var want int64
	for _, src := range sources {
		c, _ := sim.Truth(src, "acme", start, start.Add(200*time.Minute))
		want += c
	}
	if n < want {
		b.Fatalf("%d rows stored, the simulator holds %d in the backlog", n, want)
	}
	return chBenchResult{rows: n, wall: run.Wall, cpu: run.CPU(),
		serverTicks: s1 - s0, simTicks: m1 - m0, maxRSSKB: run.RuMaxRSS / 1024}
}

// logLineWith reports whether one line of logs contains every part.
func logLineWith(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
