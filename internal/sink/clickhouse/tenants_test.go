package clickhouse

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
)

// tenantBatches are the same records, byte for byte (same ids), read for
// each of tenants.
func tenantBatches(t *testing.T, tenants ...string) ([]*record.Batch, int) {
	d := generate(t, "dns", 40, testBase)
	var bs []*record.Batch
	for _, tn := range tenants {
		b := batchOf("dns", "acme", d.envs, 0)
		b.Tenant = tn
		envs := make([]record.Envelope, len(d.envs))
		copy(envs, d.envs)
		for i := range envs {
			envs[i].Tenant = tn
		}
		b.Envelopes = envs
		bs = append(bs, b)
	}
	return bs, len(d.envs)
}

// perTenant counts the rows of db's dns table by tenant after OPTIMIZE
// FINAL, which makes ReplacingMergeTree merge every two rows of one
// sorting key.
func perTenant(t *testing.T, srv *chtest.Server, db string) string {
	t.Helper()
	srv.Exec(t, "OPTIMIZE TABLE "+db+".dns FINAL")
	return srv.Query(t, "SELECT tenant, count() FROM "+db+".dns GROUP BY tenant ORDER BY tenant")
}

// Issue 32: two tenants' byte-identical records (same ids, account, time)
// are two rows each, in a new table (tenant first in the sorting key) and
// in a table of the release before tenants, which Start migrates in place
// (the column appended to its sorting key); the one-tenant form's rows
// (tenant "") stay as they were. Without the tenant column in the sorting
// key, OPTIMIZE FINAL leaves one row of each record; without the tenant in
// the insert deduplication token, the second tenant's insert passes for a
// repeat of the first's and is dropped.
func TestTwoTenantsIdenticalRecordsStayApart(t *testing.T) {
	t.Parallel()
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("table_before_tenants=%v", old), func(t *testing.T) {
			t.Parallel()
			srv := chtest.Get(t)
			db := srv.NewDatabase(t)
			if old {
				ddl, err := os.ReadFile(filepath.Join("schema", "testdata", "v3", "dns.sql"))
				if err != nil {
					t.Fatal(err)
				}
				srv.Exec(t, strings.ReplaceAll(string(ddl), "`svc`.", "`"+db+"`."))
				srv.Exec(t, `INSERT INTO `+db+`.dns (id, account, time, window_start, window_end, fetched_at, record, mid)
					VALUES ('old', 'acme', '2026-01-01 00:00:00', '2026-01-01 00:00:00', '2026-01-02 00:00:00', '2026-01-02 00:00:00', '{"mid":1}', 1)`)
			}
			s, _ := startSink(t, testConfig(srv, ProtocolNative, db))
			key := srv.Query(t, "SELECT sorting_key FROM system.tables WHERE database = '"+db+"' AND name = 'dns'")
			if want := "tenant, account, toDate(time), fqdn, time, id"; old {
				if want = "account, toDate(time), fqdn, time, id, tenant"; key != want {
					t.Fatalf("sorting key of the table made before tenants: %q, want %q", key, want)
				}
			} else if key != want {
				t.Fatalf("sorting key %q, want %q", key, want)
			}
			bs, n := tenantBatches(t, "", "acme-corp", "globex")
			// One after the other, each its own insert: the same ids, so
			// the insert deduplication token must tell the tenants apart.
			for _, b := range bs {
				writeAll(t, s, []*record.Batch{b})
			}
			// And again: a repeat of a tenant's records stays one row each.
			writeAll(t, s, bs[1:2])
			oldRows := 0
			if old {
				oldRows = 1
			}
			want := fmt.Sprintf("\t%d\nacme-corp\t%d\nglobex\t%d", n+oldRows, n, n)
			if got := perTenant(t, srv, db); got != want {
				t.Errorf("rows by tenant after OPTIMIZE FINAL:\n%s\nwant:\n%s", got, want)
			}
			if old {
				if got := srv.Query(t, "SELECT tenant, mid FROM "+db+".dns WHERE id = 'old'"); got != "\t1" {
					t.Errorf("the row written before the migration: %q", got)
				}
			}
		})
	}
}

// A table whose tenant column is not in its sorting key (made or altered
// by hand) would merge two tenants' identical records: Start refuses it,
// naming the table.
func TestStartRefusesATenantColumnOutsideTheSortingKey(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	ddl, err := os.ReadFile(filepath.Join("schema", "testdata", "v3", "dns.sql"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Exec(t, strings.ReplaceAll(string(ddl), "`svc`.", "`"+db+"`."))
	srv.Exec(t, "ALTER TABLE "+db+".dns ADD COLUMN tenant LowCardinality(String)")
	s, err := New(testConfig(srv, ProtocolNative, db), nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	err = s.Start(ctx)
	if err == nil {
		_ = s.Shutdown(ctx)
		t.Fatal("Start took a table whose sorting key lacks the tenant")
	}
	if !strings.Contains(err.Error(), db+".dns has a tenant column that its sorting key") {
		t.Errorf("error %v does not name the table and the column", err)
	}
}
