package chtest

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(Main(m)) }

func TestGetServesBothProtocols(t *testing.T) {
	s := Get(t)
	if v := s.Query(t, "SELECT version()"); !strings.HasPrefix(v, "2") {
		t.Errorf("version() = %q", v)
	}
	c, err := net.DialTimeout("tcp", s.Native, 5*time.Second)
	if err != nil {
		t.Fatalf("native port: %v", err)
	}
	_ = c.Close()
	if Get(t) != s {
		t.Error("Get started a second server")
	}
}

func TestNewDatabaseIsFreshAndDroppedAtTheEnd(t *testing.T) {
	s := Get(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		name = s.NewDatabase(t)
		if n := s.QueryInt(t, "SELECT count() FROM system.tables WHERE database = '"+name+"'"); n != 0 {
			t.Errorf("new database has %d tables", n)
		}
		s.Exec(t, "CREATE TABLE "+name+".x (a UInt8) ENGINE = MergeTree ORDER BY a")
	})
	if n := s.QueryInt(t, "SELECT count() FROM system.databases WHERE name = '"+name+"'"); n != 0 {
		t.Errorf("database %s still there after its test", name)
	}
}

func TestMissingLibraryNamesTheInstallCommand(t *testing.T) {
	t.Setenv(EnvLib, "/nonexistent/libchdb.so")
	_, err := findLib()
	if err == nil || !strings.Contains(err.Error(), "run scripts/clickhouse.sh install") {
		t.Fatalf("findLib() = %v", err)
	}
}

func TestPrivateServerSurvivesKillAndRestart(t *testing.T) {
	s := Start(t)
	db := s.NewDatabase(t)
	s.Exec(t, "CREATE TABLE "+db+".x (a UInt8) ENGINE = MergeTree ORDER BY a")
	s.Exec(t, "INSERT INTO "+db+".x VALUES (1), (2)")
	pid := s.PID()
	if pid == 0 {
		t.Fatal("no pid")
	}
	s.Kill(t)
	if s.PID() != 0 {
		t.Error("PID after Kill")
	}
	if _, err := s.query("SELECT 1"); err == nil {
		t.Fatal("killed server still answers")
	}
	s.Restart(t)
	if n := s.QueryInt(t, "SELECT count() FROM "+db+".x"); n != 2 {
		t.Errorf("%d rows after restart, want 2", n)
	}
}

// A server that dies by itself (here SIGKILL from outside, as the OOM
// killer or a crash of the engine would) is started again on the same ports
// and data, and a query sent meanwhile waits for it instead of failing.
func TestServerThatDiesByItselfIsRestarted(t *testing.T) {
	s := Start(t)
	db := s.NewDatabase(t)
	s.Exec(t, "CREATE TABLE "+db+".x (a UInt8) ENGINE = MergeTree ORDER BY a")
	s.Exec(t, "INSERT INTO "+db+".x VALUES (1), (2), (3)")
	pid := s.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// A query in flight at the moment of the crash fails; one sent once the
	// process is gone (and the restart under way) must wait and succeed.
	deadline := time.Now().Add(10 * time.Second)
	for s.Restarts() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the crash was not noticed within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	if n := s.QueryInt(t, "SELECT count() FROM "+db+".x"); n != 3 {
		t.Errorf("%d rows after the crash, want 3", n)
	}
	if got := s.Restarts(); got != 1 {
		t.Errorf("Restarts() = %d, want 1", got)
	}
	if p := s.PID(); p == 0 || p == pid {
		t.Errorf("PID after the restart = %d (was %d)", p, pid)
	}
}

// A read in flight when the engine dies (the CI failure: a SELECT cut with
// "connection reset by peer" by an abort of libchdb) is sent again once the
// server is back and answers; a write cut the same way is not repeated.
func TestQueryCutByACrashIsRepeatedOnlyWhenIdempotent(t *testing.T) {
	s := Start(t)
	db := s.NewDatabase(t)
	s.Exec(t, "CREATE TABLE "+db+".x (a UInt8) ENGINE = MergeTree ORDER BY a")
	type result struct {
		out string
		err error
	}
	slow := func(sql string) chan result {
		ch := make(chan result, 1)
		go func() {
			out, err := s.query(sql)
			ch <- result{out, err}
		}()
		return ch
	}
	crash := func() {
		t.Helper()
		before := s.Restarts()
		time.Sleep(700 * time.Millisecond) // both queries are running
		if err := syscall.Kill(s.PID(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for s.Restarts() == before {
			if time.Now().After(deadline) {
				t.Fatal("the crash was not noticed within 10s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	read := slow("SELECT sum(1 + sleepEachRow(0.5)) FROM numbers(6) SETTINGS max_block_size = 1")
	write := slow("INSERT INTO " + db + ".x SELECT 1 + sleepEachRow(0.5) FROM numbers(6) SETTINGS max_block_size = 1")
	crash()
	if r := <-read; r.err != nil || strings.TrimSpace(r.out) != "6" {
		t.Errorf("read cut by the crash: %q, %v; want it sent again and answered 6", r.out, r.err)
	}
	if r := <-write; r.err == nil {
		t.Errorf("an INSERT cut by the crash was sent again (answer %q); a write must fail instead", r.out)
	}
	if n := s.QueryInt(t, "SELECT count() FROM "+db+".x"); n != 0 {
		t.Errorf("%d rows after a cut INSERT, want 0 (not repeated)", n)
	}
}

func TestIdempotent(t *testing.T) {
	for sql, want := range map[string]bool{
		"SELECT 1":                              true,
		"  select count() FROM t":               true,
		"WITH 1 AS a SELECT a":                  true,
		"SHOW CREATE TABLE t":                   true,
		"CREATE DATABASE IF NOT EXISTS d":       true,
		"DROP DATABASE IF EXISTS d SYNC":        true,
		"CREATE TABLE d.t (a UInt8) ENGINE=Log": false,
		"INSERT INTO t VALUES (1)":              false,
		"ALTER TABLE t DELETE WHERE 1":          false,
		"DROP TABLE t":                          false,
		"":                                      false,
	} {
		if got := idempotent(sql); got != want {
			t.Errorf("idempotent(%q) = %v, want %v", sql, got, want)
		}
	}
}
