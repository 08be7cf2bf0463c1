package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

var testBase = time.Date(2026, 9, 28, 0, 0, 0, 0, time.UTC)

// whole is the parts of an insert that takes every row of cs.
func whole(cs ...*chunk) []part {
	ps := make([]part, len(cs))
	for i, c := range cs {
		ps[i] = part{c: c, hi: c.rows}
	}
	return ps
}

func count(t testing.TB, srv *chtest.Server, db, table, final string) int64 {
	t.Helper()
	return srv.QueryInt(t, fmt.Sprintf("SELECT count() FROM %s.%s %s", db, table, final))
}

// duplicatedBlocks is the server's count of insert blocks it dropped as
// repeats (all tables, since start).
func duplicatedBlocks(t testing.TB, srv *chtest.Server) int64 {
	t.Helper()
	out := srv.Query(t, "SELECT sum(value) FROM system.events WHERE event = 'DuplicatedInsertedBlocks'")
	var n int64
	fmt.Sscan(out, &n)
	return n
}

func TestRetriedInsertWithTheSameTokenIsStoredOnce(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			s, _ := startSink(t, testConfig(srv, proto, db))
			w := s.writers["dns"]
			d := generate(t, "dns", 500, testBase) // spans three monthly partitions
			n := int64(len(d.envs))
			group := whole(w.layout.newChunk(batchOf("dns", "acme", d.envs, 0)))
			token := dedupToken(w.table, group)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			for i := range 2 {
				if err := w.send(ctx, group, token); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			if got := count(t, srv, db, "dns", ""); got != n {
				t.Fatalf("the same insert sent twice with one token stored %d rows (without FINAL), want %d", got, n)
			}

			// The token, not the bytes, decides: the same ids fetched again
			// later (other fetched_at, so other bytes) are a repeat too.
			refetched := make([]record.Envelope, len(d.envs))
			copy(refetched, d.envs)
			for i := range refetched {
				refetched[i].FetchedAt = refetched[i].FetchedAt.Add(time.Hour)
			}
			again := whole(w.layout.newChunk(batchOf("dns", "acme", refetched, 0)))
			if dedupToken(w.table, again) != token {
				t.Fatal("the token depends on more than the ids")
			}
			if err := w.send(ctx, again, token); err != nil {
				t.Fatal(err)
			}
			if got := count(t, srv, db, "dns", ""); got != n {
				t.Fatalf("a repeat of the same ids stored %d rows, want %d", got, n)
			}

			// Control: under another token the same rows are stored again,
			// and only FINAL (ReplacingMergeTree) hides them.
			if err := w.send(ctx, group, token+"-other"); err != nil {
				t.Fatal(err)
			}
			if got := count(t, srv, db, "dns", ""); got != 2*n {
				t.Fatalf("another token stored %d rows in all, want %d", got, 2*n)
			}
			if got := count(t, srv, db, "dns", "FINAL"); got != n {
				t.Fatalf("count() FINAL = %d, want %d", got, n)
			}
		})
	}
}

// cutProxy forwards TCP connections to a server. Once armed, it cuts the
// first connection that uploaded more than threshold bytes at the moment
// the server starts answering: the server has the whole insert, the client
// never hears that it was stored.
type cutProxy struct {
	ln        net.Listener
	target    string
	threshold int64
	armed     atomic.Bool
	cuts      atomic.Int32
	wg        sync.WaitGroup
	mu        sync.Mutex
	conns     []net.Conn
}

func newCutProxy(t *testing.T, target string, threshold int64) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, threshold: threshold}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		var uploaded atomic.Int64
		p.wg.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := client.Read(buf)
				if n > 0 {
					uploaded.Add(int64(n))
					if _, werr := server.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					_ = server.Close()
					return
				}
			}
		})
		p.wg.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 {
					if uploaded.Load() > p.threshold && p.armed.CompareAndSwap(true, false) {
						p.cuts.Add(1)
						_ = client.Close()
						_ = server.Close()
						return
					}
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					_ = client.Close()
					return
				}
			}
		})
	}
}

func TestConnectionCutAfterSendLosesNothingAndStoresNothingTwice(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			// A server of its own: a native insert cut in flight can make
			// the test server abort; chtest restarts it, but the crash must
			// not cut the queries of the tests sharing the package's
			// server. Its DuplicatedInsertedBlocks count is this test's too.
			srv := chtest.Start(t)
			db := srv.NewDatabase(t)
			proxy := newCutProxy(t, addrOf(srv, proto), 64<<10)
			cfg := testConfig(srv, proto, db)
			cfg.Addr = []string{proxy.addr()}
			s, reg := startSink(t, cfg)
			d := generate(t, "dns", 3000, testBase)
			n := int64(len(d.envs))
			dupBefore := duplicatedBlocks(t, srv)

			proxy.armed.Store(true)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.Write(ctx, batchOf("dns", "acme", d.envs, 0)); err != nil {
				t.Fatalf("Write: %v (the sink should have repeated the insert)", err)
			}
			if proxy.cuts.Load() != 1 {
				t.Fatalf("the proxy cut %d connections, want 1: the test did not test anything", proxy.cuts.Load())
			}
			if got := testutil.ToFloat64(s.m.errors.WithLabelValues("dns")); got != 1 {
				t.Errorf("%s{table=dns} = %v, want 1", MetricInsertErrors, got)
			}
			if got := count(t, srv, db, "dns", ""); got != n {
				t.Errorf("stored %d rows (without FINAL), want %d: the repeat was stored twice or lost", got, n)
			}
			if got := count(t, srv, db, "dns", "FINAL"); got != n {
				t.Errorf("count() FINAL = %d, want %d", got, n)
			}
			dedup := duplicatedBlocks(t, srv) - dupBefore
			t.Logf("server dropped %d repeated blocks", dedup)
			if proto == ProtocolHTTP && dedup < 1 {
				// Over HTTP the server answers only once the insert is
				// stored: the repeat must have been dropped by its token.
				t.Errorf("DuplicatedInsertedBlocks grew by %d, want the repeat dropped", dedup)
			}
			_ = reg
		})
	}
}

func TestServerKilledAndRestartedLosesNothing(t *testing.T) {
	t.Parallel()
	srv := chtest.Start(t)
	db := srv.NewDatabase(t)
	cfg := testConfig(srv, ProtocolNative, db)
	cfg.InsertAttempts = 12 // retry for about 30s: longer than a restart
	cfg.QueryTimeout = 5 * time.Second
	cfg.DialTimeout = time.Second
	s, _ := startSink(t, cfg)
	d := generate(t, "connections", 600, testBase)
	a, b := batchOf("connections", "acme", d.envs[:300], 0), batchOf("connections", "acme", d.envs[300:], 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Write(ctx, a); err != nil {
		t.Fatal(err)
	}

	srv.Kill(t)
	done := make(chan error, 1)
	go func() { done <- s.Write(ctx, b) }()
	// The first attempts fail against the dead server; the sink must keep
	// repeating the insert until the server is back.
	for testutil.ToFloat64(s.m.errors.WithLabelValues("connections")) < 1 {
		select {
		case err := <-done:
			t.Fatalf("Write returned %v before the server came back", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	srv.Restart(t)
	if err := <-done; err != nil {
		t.Fatalf("Write across the restart: %v", err)
	}
	// After a crash of the collector the pages in flight come again.
	if err := s.Write(ctx, a); err != nil {
		t.Fatal(err)
	}
	n := int64(len(d.envs))
	if got := count(t, srv, db, "connections", "FINAL"); got != n {
		t.Errorf("count() FINAL = %d, want %d", got, n)
	}
	if got := srv.QueryInt(t, fmt.Sprintf("SELECT uniqExact(id) FROM %s.connections", db)); got != n {
		t.Errorf("%d distinct ids, want %d", got, n)
	}
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready after restart: %v", err)
	}
}

func TestStartAddsTheColumnsAnOlderSchemaLacks(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			// An older dns table: no window_end, no fqdn, no host_ip_addr,
			// account as plain String, no deduplication window.
			srv.Exec(t, `CREATE TABLE `+db+`.dns (id String, account String, time DateTime64(3, 'UTC'),
				window_start DateTime64(3, 'UTC'), fetched_at DateTime64(3, 'UTC'), record String, mid Int64)
				ENGINE = ReplacingMergeTree(fetched_at) PARTITION BY toYYYYMM(time) ORDER BY (account, time, id)`)
			srv.Exec(t, `INSERT INTO `+db+`.dns (id, account, time, window_start, fetched_at, record, mid)
				VALUES ('old', 'acme', '2026-01-01 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00', '{"mid":1}', 1)`)

			s, _ := startSink(t, testConfig(srv, proto, db))
			cols := srv.Query(t, "SELECT name FROM system.columns WHERE database = '"+db+"' AND table = 'dns' ORDER BY position")
			for _, c := range []string{"window_end", "fqdn", "host_ip_addr"} {
				if !strings.Contains(cols, c) {
					t.Errorf("column %s not added: %s", c, cols)
				}
			}
			if ddl := srv.Query(t, "SHOW CREATE TABLE "+db+".dns"); !strings.Contains(ddl, "non_replicated_deduplication_window = 1000") {
				t.Errorf("deduplication window not turned on:\n%s", ddl)
			}
			d := generate(t, "dns", 50, testBase)
			writeAll(t, s, []*record.Batch{batchOf("dns", "acme", d.envs, 0)})
			rows := readTable(t, openConn(t, srv.Native), db, "dns")
			if len(rows) != len(d.want)+1 {
				t.Fatalf("%d rows, want %d new and the old one", len(rows), len(d.want))
			}
			for id, w := range d.want {
				for col, v := range w.want {
					if rows[id].typed[col] != v {
						t.Errorf("%s: %s = %#v, want %#v", id, col, rows[id].typed[col], v)
					}
				}
			}
			if old := rows["old"]; old.typed["fqdn"] != "" || old.typed["mid"] != int64(1) {
				t.Errorf("old row = %+v", old)
			}
		})
	}
}

func TestStartRefusesAColumnOfAnIncompatibleType(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	srv.Exec(t, `CREATE TABLE `+db+`.dns (id String, account LowCardinality(String), time DateTime,
		record String, mid String) ENGINE = ReplacingMergeTree ORDER BY (account, time, id)`)
	s, err := New(testConfig(srv, ProtocolNative, db), nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), "column mid: found type String, expected Int64") {
		t.Errorf("Check = %v, want the incompatible column named", err)
	}
	err = s.Start(ctx)
	if err == nil {
		_ = s.Shutdown(ctx)
		t.Fatal("Start accepted a table whose column mid is a String")
	}
	for _, want := range []string{
		"table " + db + ".dns column mid: found type String, expected Int64",
		"table " + db + ".dns column time: found type DateTime, expected DateTime64(3, 'UTC')",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start error lacks %q:\n%v", want, err)
		}
	}
	if got := srv.QueryInt(t, "SELECT count() FROM system.columns WHERE database = '"+db+"' AND table = 'dns' AND name = 'mid' AND type = 'String'"); got != 1 {
		t.Error("Start changed the incompatible column")
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown after a failed Start: %v", err)
	}
}

func TestEdgeAlertsViewHoldsTheLatestVersionOfEachAlert(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	s, _ := startSink(t, testConfig(srv, ProtocolNative, db))
	g := newGen("edge_alerts", 3)
	created := testBase
	fetched := testBase.Add(time.Hour)
	env := func(r genRecord, fetchedAt time.Time) record.Envelope {
		return envelope(t, "edge_alerts", "acme", r.raw, created, created.Add(time.Hour), fetchedAt)
	}
	ua, ub, uc := "aaaa-alert", "bbbb-alert", "cccc-alert"
	// Versions arrive in any order; a tie on update_time goes to the one
	// fetched last.
	batches := [][]record.Envelope{
		{env(g.alert(created, ua, created.Add(3*time.Minute), "CLOSED"), fetched)},
		{env(g.alert(created, ua, created.Add(1*time.Minute), "OPEN"), fetched), env(g.alert(created, ub, created.Add(time.Minute), "OPEN"), fetched)},
		{env(g.alert(created, ua, created.Add(2*time.Minute), "IN_PROGRESS"), fetched)},
		{env(g.alert(created, uc, created.Add(time.Minute), "OPEN"), fetched)},
		{env(g.alert(created, uc, created.Add(time.Minute), "CLOSED"), fetched.Add(time.Minute))},
	}
	for i, envs := range batches {
		writeAll(t, s, []*record.Batch{batchOf("edge_alerts", "acme", envs, i)})
	}
	got := srv.Query(t, "SELECT uuid, status, toUnixTimestamp64Milli(update_time) - "+
		fmt.Sprint(created.UnixMilli())+" FROM "+db+".edge_alerts_latest ORDER BY uuid")
	want := strings.Join([]string{ua + "\tCLOSED\t180000", ub + "\tOPEN\t60000", uc + "\tCLOSED\t60000"}, "\n")
	if got != want {
		t.Errorf("edge_alerts_latest:\n%s\nwant:\n%s", got, want)
	}
	if n := count(t, srv, db, "edge_alerts", "FINAL"); n != 6 {
		t.Errorf("edge_alerts keeps %d versions, want all 6", n)
	}
}

// waitPending waits until the table's writer holds n pending chunks.
func waitPending(t *testing.T, w *tableWriter, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.mu.Lock()
		got := len(w.pending)
		w.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d chunks pending, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestShutdownSendsPendingRowsAtOnce(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	cfg := testConfig(srv, ProtocolHTTP, db)
	cfg.FlushInterval = time.Hour // only Shutdown can send them
	s, err := New(cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	d := generate(t, "audit_logs", 100, testBase)
	done := make(chan error, 1)
	go func() { done <- s.Write(ctx, batchOf("audit_logs", "org", d.envs, 0)) }()
	waitPending(t, s.writers["audit_logs"], 1)
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Write pending at Shutdown: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	if got := count(t, srv, db, "audit_logs", "FINAL"); got != int64(len(d.envs)) {
		t.Errorf("%d rows stored, want %d", got, len(d.envs))
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	err = s.Write(ctx, batchOf("audit_logs", "org", d.envs[:1], 1))
	if !errors.Is(err, sinkhelper.ErrClosed) {
		t.Errorf("Write after Shutdown = %v, want ErrClosed", err)
	}
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready after Shutdown = nil")
	}
}

func TestAWriteThatGivesUpWithdrawsItsRows(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	cfg := testConfig(srv, ProtocolNative, db)
	cfg.FlushInterval = time.Hour
	s, _ := startSink(t, cfg)
	d := generate(t, "user_logins", 20, testBase)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.Write(ctx, batchOf("user_logins", "acme", d.envs, 0))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "withdrawn") {
		t.Fatalf("Write = %v, want a deadline error saying the rows were withdrawn", err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	if err := s.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if got := count(t, srv, db, "user_logins", ""); got != 0 {
		t.Errorf("%d rows stored although their Write gave up before the insert", got)
	}
}

func TestLifecycleWithoutStart(t *testing.T) {
	t.Parallel()
	s, err := New(DefaultConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready before Start = nil")
	}
	if err := s.Write(ctx, &record.Batch{Source: "dns", Envelopes: make([]record.Envelope, 1)}); !errors.Is(err, sinkhelper.ErrNotStarted) {
		t.Errorf("Write before Start = %v", err)
	}
	if err := s.Write(ctx, &record.Batch{Source: "dns"}); !errors.Is(err, sinkhelper.ErrNotStarted) {
		t.Errorf("an empty Write before Start = %v, want ErrNotStarted like any other", err)
	}
	for range 2 {
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown without Start: %v", err)
		}
	}
	if err := s.Start(ctx); err == nil {
		t.Error("Start after Shutdown = nil")
	}
}

func TestReadyCheckAndUnknownSource(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	cfg := testConfig(srv, ProtocolHTTP, db+"_new") // created by Start
	t.Cleanup(func() { srv.Exec(t, "DROP DATABASE IF EXISTS "+db+"_new SYNC") })
	s, err := New(cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check before Start (no database yet): %v", err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check after Start: %v", err)
	}
	if v := s.ServerVersion(); !versionAtLeast(v, MinServerVersion) {
		t.Errorf("ServerVersion() = %q", v)
	}
	err = s.Write(ctx, &record.Batch{Source: "nope", Envelopes: make([]record.Envelope, 1)})
	if !sink.IsPermanent(err) || !strings.Contains(err.Error(), `no ClickHouse table for source "nope"`) {
		t.Errorf("Write of an unknown source = %v", err)
	}
	bad := cfg
	bad.Addr = []string{"127.0.0.1:1"}
	bad.DialTimeout = time.Second
	b, err := New(bad, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err == nil || !strings.Contains(err.Error(), "ping clickhouse") {
		t.Errorf("Start against no server = %v", err)
	}
}

func TestAsyncInsertsAreConfirmedAndDeduplicated(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			cfg := testConfig(srv, proto, db)
			cfg.AsyncInsert = true
			s, _ := startSink(t, cfg)
			d := generate(t, "agent_info", 200, testBase)
			b := batchOf("agent_info", "acme", d.envs, 0)
			writeAll(t, s, []*record.Batch{b})
			// Confirmed means stored: no waiting for a flush of the
			// server's buffer.
			n := int64(len(d.envs))
			if got := count(t, srv, db, "agent_info", ""); got != n {
				t.Fatalf("%d rows right after the Write, want %d", got, n)
			}
			w := s.writers["agent_info"]
			group := whole(w.layout.newChunk(b))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := w.send(ctx, group, dedupToken(w.table, group)); err != nil {
				t.Fatal(err)
			}
			if got := count(t, srv, db, "agent_info", ""); got != n {
				t.Errorf("the repeated async insert stored %d rows, want %d", got, n)
			}
		})
	}
}

// TestWriteLargerThanBatchBytesGoesInPartsWithinIt: a Write whose rows
// pass batch_bytes is stored whole, by several inserts, none larger than
// batch_bytes, and the Write returns once the last is stored. Before
// batch_bytes a batch was one insert, however large, and the driver held
// it about three times over.
func TestWriteLargerThanBatchBytesGoesInPartsWithinIt(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			cfg := testConfig(srv, proto, db)
			cfg.BatchBytes = MinBatchBytes
			s, _ := startSink(t, cfg)
			d := generate(t, "connections", 1500, testBase)
			b := batchOf("connections", "acme", d.envs, 0)
			size := s.writers["connections"].layout.newChunk(b).bytes
			if size < 3*cfg.BatchBytes {
				t.Fatalf("the batch holds %d bytes: too small for the test (batch_bytes %d)", size, cfg.BatchBytes)
			}
			writeAll(t, s, []*record.Batch{b})
			n := int64(len(d.envs))
			if got := count(t, srv, db, "connections", ""); got != n {
				t.Fatalf("%d rows stored after the Write, want %d", got, n)
			}
			inserts := testutil.ToFloat64(s.m.inserts.WithLabelValues("connections"))
			bytes := testutil.ToFloat64(s.m.bytes.WithLabelValues("connections"))
			if least := float64((size + cfg.BatchBytes - 1) / cfg.BatchBytes); inserts < least {
				t.Errorf("%v inserts for %d bytes, want at least %v (batch_bytes %d)", inserts, size, least, cfg.BatchBytes)
			}
			if bytes != float64(size) {
				t.Errorf("%v bytes inserted, want %d", bytes, size)
			}
			t.Logf("%d rows, %d bytes in %v inserts", n, size, inserts)
		})
	}
}

func TestInsertsTakeWholeBatchesInOrderUpToBatchRowsAndBytes(t *testing.T) {
	t.Parallel()
	s := &Sink{cfg: DefaultConfig()}
	s.cfg.BatchRows, s.cfg.BatchBytes, s.cfg.FlushInterval = 100, 1000, time.Second
	w := &tableWriter{s: s}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// mk makes a chunk of rows rows of size bytes each.
	mk := func(rows, size int, at time.Duration) *chunk {
		c := &chunk{rows: rows, bytes: rows * size, arrived: t0.Add(at), cum: make([]int, rows+1)}
		for i := range rows {
			c.cum[i+1] = c.cum[i] + size
		}
		return c
	}
	a, b, c, d, e := mk(30, 1, 0), mk(30, 1, 1), mk(30, 1, 2), mk(30, 1, 3), mk(250, 1, 4)
	f, g := mk(40, 30, 5), mk(5, 30, 6) // 1,200 and 150 bytes
	h := mk(3, 5000, 7)                 // every row alone passes batch_bytes
	for _, ck := range []*chunk{a, b, c, d, e, f, g, h} {
		w.pending = append(w.pending, ck)
		w.rows += ck.rows
		w.bytes += ck.bytes
	}
	steps := []struct {
		want []part
		why  string
	}{
		{whole(a, b, c), "due (rows pending pass batch_rows); 90+30 > 100"},
		{whole(d), "d alone, e would pass batch_rows"},
		{[]part{{e, 0, 100}}, "a batch larger than batch_rows goes in parts of batch_rows"},
		{[]part{{e, 100, 200}}, "the next part at once"},
		{[]part{{e, 200, 250}}, "the rest alone: f would pass batch_bytes"},
		{[]part{{f, 0, 33}}, "a batch larger than batch_bytes goes in parts within batch_bytes (33 x 30 bytes)"},
		{[]part{{f, 33, 40}, {g, 0, 5}}, "the rest of f with g: 210 + 150 bytes"},
		{[]part{{h, 0, 1}}, "a row larger than batch_bytes goes alone"},
		{[]part{{h, 1, 2}}, "and the next"},
		{[]part{{h, 2, 3}}, "and the last, though below the bounds: its batch is half written"},
	}
	for i, st := range steps {
		got, _ := w.takeLocked(t0)
		if !slices.Equal(got, st.want) {
			t.Fatalf("step %d (%s): took %v, want %v", i, st.why, got, st.want)
		}
	}
	if got, wait := w.takeLocked(t0); got != nil || wait != -1 || w.rows != 0 || w.bytes != 0 {
		t.Fatalf("nothing pending: took %v, wait %v, %d rows and %d bytes left", got, wait, w.rows, w.bytes)
	}
	// Below batch_rows and batch_bytes an insert waits for the oldest
	// chunk's flush_interval.
	k := mk(10, 1, 0)
	w.pending, w.rows, w.bytes = []*chunk{k}, 10, 10
	if got, wait := w.takeLocked(t0.Add(400 * time.Millisecond)); got != nil || wait != 600*time.Millisecond {
		t.Fatalf("took %v, wait %v; want nothing for 600ms", got, wait)
	}
	if got, _ := w.takeLocked(t0.Add(time.Second)); len(got) != 1 {
		t.Fatal("the oldest chunk waited flush_interval and was not taken")
	}
	// Bytes alone make an insert due.
	m := mk(2, 600, 0)
	w.pending, w.rows, w.bytes = []*chunk{m}, 2, 1200
	if got, _ := w.takeLocked(t0); !slices.Equal(got, []part{{m, 0, 1}}) {
		t.Fatalf("rows pending past batch_bytes: took %v, want the first row at once", got)
	}
}
