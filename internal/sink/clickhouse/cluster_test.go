package clickhouse

import (
	"context"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// The test server has no cluster, so an insert into a Distributed table
// cannot run here; what can: the server knows every setting a cluster's
// insert sends (an unknown one would fail every insert for good), and an
// insert repeated with them and the same token is stored once.
func TestTheServerTakesTheSettingsOfAClusterInsert(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	srv.Exec(t, "CREATE TABLE "+db+".t (id String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 10")
	cfg := DefaultConfig()
	cfg.Cluster = "logs"
	conn := openConn(t, srv.Native)
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := conn.Exec(ch.Context(ctx, ch.WithSettings(insertSettings(cfg, "token-1"))), "INSERT INTO "+db+".t VALUES ('a'), ('b')")
		cancel()
		if err != nil {
			t.Fatalf("insert with the settings of a cluster: %v", err)
		}
	}
	if n := srv.QueryInt(t, "SELECT count() FROM "+db+".t"); n != 2 {
		t.Errorf("%d rows after the same insert twice, want 2", n)
	}
}
