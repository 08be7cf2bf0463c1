package chtest

import (
	"net"
	"strings"
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
