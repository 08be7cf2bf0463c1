package schema

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden DDL files in testdata/ddl and testdata/ddl_cluster")

// Configurations of the golden files: the default (one server, no TTL) and
// a cluster named "logs" with a TTL of a year.
var (
	singleOpts  = Options{Database: "svc"}
	clusterOpts = Options{Database: "svc", Cluster: "logs", TTL: 365 * 24 * time.Hour}
)

// statements are every statement the schema gives for o, by golden file
// name: what Ensure creates, what it runs on a table of the first schema
// (v1.evolve.sql: dns as testdata/v1 has it, TTL of a year), and the
// migration of its sorting key.
func statements(o Options) map[string]string {
	files := map[string]string{"database.sql": createDatabaseSQL(o) + "\n"}
	for _, spec := range Tables() {
		files[spec.Source+".sql"] = createTableSQL(o, spec)
		files[spec.Source+".insert.sql"] = InsertSQL(o, spec) + "\n"
		if o.Cluster != "" {
			files[spec.Source+".distributed.sql"] = createDistributedSQL(o, spec)
		}
	}
	for _, v := range latestViews() {
		files[v.source+ViewSuffix+".sql"] = latestViewSQL(o, v)
	}

	dns := tableOf("dns")
	ttl := o
	ttl.TTL = 365 * 24 * time.Hour
	evolve := []string{
		addColumnSQL(o, o.qualifiedLocal("dns"), dns.Columns()[ColOriginal], true),
		convertColumnSQL(o, o.qualifiedLocal("dns"), dns.Columns()[NumCommon+2], true),
		modifyCodecsSQL(o, "dns", []Column{dns.Columns()[ColID], dns.Columns()[ColTime], dns.Columns()[NumCommon+1]}),
		addIndexesSQL(o, "dns", dns.Bloom),
		materializeIndexesSQL(o, "dns", dns.Bloom),
	}
	evolve = append(evolve, ttlSQL(ttl, "dns")...)
	if o.Cluster == "" {
		evolve = append(evolve, dedupWindowSQL(o, "dns"))
	} else {
		evolve = append(evolve, addColumnSQL(o, o.Qualified("dns"), dns.Columns()[ColOriginal], false),
			convertColumnSQL(o, o.Qualified("dns"), dns.Columns()[NumCommon+2], false))
	}
	files["dns.evolve.sql"] = strings.Join(evolve, "\n") + "\n"
	if o.Cluster == "" {
		cols := map[string]string{}
		for _, c := range dns.Columns() {
			if c.Name != "record_original" && c.Name != "window_end" {
				cols[c.Name] = c.Type
			}
		}
		files["dns.migrate.sql"] = strings.Join(migrationSQL(o, dns, cols), "\n") + "\n"
		files["dns.ttl.sql"] = createTableSQL(ttl, dns)
	}
	return files
}

// TestDDLMatchesGoldenFiles pins every statement, for one server and for a
// cluster: a change of a table is a reviewed change of testdata/ddl and
// testdata/ddl_cluster (go test -run TestDDL -update rewrites them).
func TestDDLMatchesGoldenFiles(t *testing.T) {
	t.Parallel()
	for dir, o := range map[string]Options{"ddl": singleOpts, "ddl_cluster": clusterOpts} {
		t.Run(dir, func(t *testing.T) {
			files := statements(o)
			dir := filepath.Join("testdata", dir)
			if *updateGolden {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, text := range files {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(files) {
				t.Errorf("%s has %d files, the DDL %d: remove stale files or run with -update", dir, len(entries), len(files))
			}
			for name, text := range files {
				want, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Errorf("%v (run with -update to create it)", err)
					continue
				}
				if string(want) != text {
					t.Errorf("DDL %s/%s differs from the golden file (run with -update after review):\n got:\n%s\nwant:\n%s", dir, name, text, want)
				}
			}
		})
	}
}

// On a cluster every statement names the cluster, the rows live in
// replicated local tables, and everything else goes through the
// Distributed table sharded by the record id.
func TestClusterStatementsAreOnClusterAndReplicated(t *testing.T) {
	t.Parallel()
	o := clusterOpts
	for name, text := range statements(o) {
		for _, stmt := range strings.Split(strings.TrimSpace(text), "\n") {
			if strings.HasPrefix(stmt, "CREATE") || strings.HasPrefix(stmt, "ALTER") {
				if !strings.Contains(stmt, " ON CLUSTER `logs`") {
					t.Errorf("%s: statement without ON CLUSTER: %s", name, stmt)
				}
			}
		}
	}
	for _, spec := range Tables() {
		local := createTableSQL(o, spec)
		for _, want := range []string{
			"CREATE TABLE IF NOT EXISTS `svc`.`" + spec.Source + "_local` ON CLUSTER `logs`\n",
			"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', fetched_at)\n",
			"TTL toDateTime(time) + toIntervalDay(365)\n",
		} {
			if !strings.Contains(local, want) {
				t.Errorf("%s: local table lacks %q:\n%s", spec.Source, want, local)
			}
		}
		if strings.Contains(local, "non_replicated_deduplication_window") {
			t.Errorf("%s: a replicated table with non_replicated_deduplication_window:\n%s", spec.Source, local)
		}
		want := "CREATE TABLE IF NOT EXISTS `svc`.`" + spec.Source + "` ON CLUSTER `logs` AS `svc`.`" + spec.Source + "_local`\n" +
			"ENGINE = Distributed('logs', 'svc', '" + spec.Source + "_local', cityHash64(id))\n"
		if got := createDistributedSQL(o, spec); got != want {
			t.Errorf("%s: distributed table\n%s\nwant\n%s", spec.Source, got, want)
		}
		if !strings.HasPrefix(InsertSQL(o, spec), "INSERT INTO `svc`.`"+spec.Source+"` (") {
			t.Errorf("%s: inserts do not go to the Distributed table: %s", spec.Source, InsertSQL(o, spec))
		}
	}
	for _, v := range latestViews() {
		if view := latestViewSQL(o, v); !strings.Contains(view, "FROM `svc`.`"+v.source+"`\n") {
			t.Errorf("the view does not read the Distributed table:\n%s", view)
		}
	}
}

// The record id is the last element of every sorting key (ReplacingMergeTree
// deduplicates by the whole key), the elements before it are the account,
// the record time and members of the record, and the primary key is the
// sorting key up to the key column (no time: see PrimaryKey).
func TestSortingKeyEndsWithTheIDAndHoldsOnlyFunctionsOfTheRecord(t *testing.T) {
	t.Parallel()
	for _, spec := range Tables() {
		key := spec.SortingKey()
		if key[len(key)-1] != "id" {
			t.Errorf("%s: sorting key %v does not end with id", spec.Source, key)
		}
		fields := map[string]bool{}
		for _, f := range spec.Fields {
			fields[f.Column] = true
		}
		for _, k := range key[:len(key)-1] {
			if k != TenantColumn && k != "account" && k != "time" && k != "toDate(time)" && !fields[k] {
				t.Errorf("%s: sorting key element %s is neither the tenant, the account, the record time nor a member of the record", spec.Source, k)
			}
		}
		if got := strings.Join(spec.PrimaryKey(), ","); got != "tenant,account,toDate(time),"+spec.Key || !slices.Equal(key[:4], spec.PrimaryKey()) {
			t.Errorf("%s: primary key %s, want tenant, account, toDate(time), %s: a prefix of the sorting key without the time", spec.Source, got, spec.Key)
		}
		derived := map[string]bool{}
		for _, c := range spec.Derived {
			derived[c.Name] = true
		}
		for _, col := range append([]string{spec.Key}, spec.Bloom...) {
			if !fields[col] && !derived[col] && col != "id" {
				t.Errorf("%s: key or index column %s is no column", spec.Source, col)
			}
		}
	}
}

func TestTablePrefixAndDatabaseNameEveryStatement(t *testing.T) {
	t.Parallel()
	o := Options{Database: "analytics", Prefix: "svc_"}
	for _, spec := range Tables() {
		ddl := createTableSQL(o, spec)
		if !strings.HasPrefix(ddl, "CREATE TABLE IF NOT EXISTS `analytics`.`svc_"+spec.Source+"`\n") {
			t.Errorf("DDL of %s does not name `analytics`.`svc_%s`:\n%s", spec.Source, spec.Source, ddl)
		}
		if !strings.HasPrefix(InsertSQL(o, spec), "INSERT INTO `analytics`.`svc_"+spec.Source+"` (") {
			t.Errorf("insert of %s: %s", spec.Source, InsertSQL(o, spec))
		}
	}
	for _, v := range latestViews() {
		view := latestViewSQL(o, v)
		for _, want := range []string{"VIEW `analytics`.`svc_" + v.source + "_latest`", "FROM `analytics`.`svc_" + v.source + "`"} {
			if !strings.Contains(view, want) {
				t.Errorf("view lacks %q:\n%s", want, view)
			}
		}
	}
	o.Cluster = "c"
	if got := createDistributedSQL(o, tableOf("dns")); !strings.Contains(got, "Distributed('c', 'analytics', 'svc_dns_local', cityHash64(id))") {
		t.Errorf("distributed table: %s", got)
	}
}

func TestEverySourceOfTheContractHasATable(t *testing.T) {
	t.Parallel()
	want := []string{"changed_files", "connections", "dns", "user_logins", "cloud_activities",
		"audit_logs", "agent_info", "edge_audit_events", "edge_alerts"}
	got := Sources()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Sources() = %v, want %v", got, want)
	}
	for _, spec := range Tables() {
		seen := map[string]bool{}
		for _, c := range spec.AllColumns() {
			if seen[c.Name] {
				t.Errorf("%s: column %s twice", spec.Source, c.Name)
			}
			seen[c.Name] = true
		}
	}
}

func TestCompatibleTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		found, want string
		ok          bool
	}{
		{"String", "String", true},
		{"LowCardinality(String)", "String", true},
		{"String", "LowCardinality(String)", true},
		{"DateTime64(3, 'UTC')", "DateTime64(3, 'UTC')", true},
		{"DateTime64(3)", "DateTime64(3, 'UTC')", true},
		{"DateTime64(3, 'Europe/Berlin')", "DateTime64(3, 'UTC')", true},
		{"DateTime64(6, 'UTC')", "DateTime64(3, 'UTC')", false},
		{"DateTime", "DateTime64(3, 'UTC')", false},
		{"String", "Int64", false},
		{"Int32", "Int64", false},
		{"UInt64", "Int64", false},
		{"Nullable(String)", "String", false},
		{"String", "Nullable(String)", false},
		{"Nullable(String)", "Nullable(String)", true},
		{"Int64", "Int64", true},
	}
	for _, c := range cases {
		if got := compatibleType(c.found, c.want); got != c.ok {
			t.Errorf("compatibleType(%q, %q) = %v, want %v", c.found, c.want, got, c.ok)
		}
	}
}

func TestOnlyTheStringColumnsOfIPsAndSeveritiesAreConvertedInPlace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		found, want string
		ok          bool
	}{
		{"String", "Nullable(IPv6)", true},
		{"LowCardinality(String)", "Nullable(UInt8)", true},
		{"String", "Nullable(UInt8)", true},
		{"Nullable(String)", "Nullable(IPv6)", false},
		{"String", "Int64", false},
		{"String", "DateTime64(3, 'UTC')", false},
		{"IPv4", "Nullable(IPv6)", false},
		{"Nullable(IPv6)", "Nullable(IPv6)", false},
	}
	for _, c := range cases {
		if got := convertibleType(c.found, c.want); got != c.ok {
			t.Errorf("convertibleType(%q, %q) = %v, want %v", c.found, c.want, got, c.ok)
		}
	}
}

func TestTableTTLIsReadFromEngineFull(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"ReplacingMergeTree(fetched_at) PARTITION BY toYYYYMM(time) ORDER BY (account, time, id) SETTINGS index_granularity = 8192":                                           "",
		"ReplacingMergeTree(fetched_at) PARTITION BY toYYYYMM(time) ORDER BY (account, time, id) TTL toDateTime(time) + toIntervalDay(365) SETTINGS index_granularity = 8192": "toDateTime(time) + toIntervalDay(365)",
		"MergeTree ORDER BY id TTL toDateTime(time) + toIntervalDay(7)":                                                                                                       "toDateTime(time) + toIntervalDay(7)",
	}
	for in, want := range cases {
		if got := tableTTL(in); got != want {
			t.Errorf("tableTTL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClusterNames(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{"logs": true, "prod-eu.1": true, "a_b": true, "": false, "a b": false, "a`b": false, "a'b": false, strings.Repeat("x", 129): false} {
		if ClusterName(s) != ok {
			t.Errorf("ClusterName(%q) = %v", s, !ok)
		}
	}
}

func tableOf(source string) Table {
	for _, t := range Tables() {
		if t.Source == source {
			return t
		}
	}
	panic("no table for " + source)
}

// sortedKeys of a set, for stable messages.
func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
