package clickhouse

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden DDL files in testdata/ddl")

// TestDDLMatchesGoldenFiles pins the DDL of the default configuration:
// a change of a table is a reviewed change of testdata/ddl (go test
// -run TestDDL -update rewrites the files).
func TestDDLMatchesGoldenFiles(t *testing.T) {
	n := names{Database: DefaultDatabase}
	files := map[string]string{"database.sql": createDatabaseSQL(n) + "\n"}
	for _, spec := range tableSpecs() {
		files[spec.Source+".sql"] = createTableSQL(n, spec)
		files[spec.Source+".insert.sql"] = insertSQL(n, spec) + "\n"
	}
	files["edge_alerts"+ViewSuffix+".sql"] = latestAlertsViewSQL(n)
	files["dns.add_column.sql"] = addColumnSQL(n, "dns", specOf("dns").columns()[numCommon+2]) + "\n" +
		dedupWindowSQL(n, "dns") + "\n"
	dir := filepath.Join("testdata", "ddl")
	if *updateGolden {
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
		t.Errorf("testdata/ddl has %d files, the DDL %d: remove stale files or run with -update", len(entries), len(files))
	}
	for name, text := range files {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%v (run with -update to create it)", err)
			continue
		}
		if string(want) != text {
			t.Errorf("DDL %s differs from the golden file (run with -update after review):\n got:\n%s\nwant:\n%s", name, text, want)
		}
	}
}

func TestTablePrefixAndDatabaseNameEveryStatement(t *testing.T) {
	n := names{Database: "analytics", Prefix: "svc_"}
	for _, spec := range tableSpecs() {
		ddl := createTableSQL(n, spec)
		if !strings.HasPrefix(ddl, "CREATE TABLE IF NOT EXISTS `analytics`.`svc_"+spec.Source+"`\n") {
			t.Errorf("DDL of %s does not name `analytics`.`svc_%s`:\n%s", spec.Source, spec.Source, ddl)
		}
		if !strings.HasPrefix(insertSQL(n, spec), "INSERT INTO `analytics`.`svc_"+spec.Source+"` (") {
			t.Errorf("insert of %s: %s", spec.Source, insertSQL(n, spec))
		}
	}
	view := latestAlertsViewSQL(n)
	for _, want := range []string{"VIEW `analytics`.`svc_edge_alerts_latest`", "FROM `analytics`.`svc_edge_alerts`"} {
		if !strings.Contains(view, want) {
			t.Errorf("view lacks %q:\n%s", want, view)
		}
	}
}

func TestEverySourceOfTheContractHasATable(t *testing.T) {
	want := []string{"changed_files", "connections", "dns", "user_logins", "cloud_activities",
		"audit_logs", "agent_info", "edge_audit_events", "edge_alerts"}
	got := Sources()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Sources() = %v, want %v", got, want)
	}
	for _, spec := range tableSpecs() {
		seen := map[string]bool{}
		for _, c := range spec.columns() {
			if seen[c.Name] {
				t.Errorf("%s: column %s twice", spec.Source, c.Name)
			}
			seen[c.Name] = true
		}
	}
}

func TestCompatibleTypes(t *testing.T) {
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
		{"Int64", "Int64", true},
	}
	for _, c := range cases {
		if got := compatibleType(c.found, c.want); got != c.ok {
			t.Errorf("compatibleType(%q, %q) = %v, want %v", c.found, c.want, got, c.ok)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	cases := []struct {
		have, want string
		ok         bool
	}{
		{"26.7.2.1", "24.8", true},
		{"24.8.1.2684", "24.8", true},
		{"24.8", "24.8", true},
		{"24.7.9.1", "24.8", false},
		{"23.12.1", "24.8", false},
		{"18.16.1", "24.8", false},
		{"100.1", "24.8", true},
		{"garbage", "24.8", false},
	}
	for _, c := range cases {
		if got := versionAtLeast(c.have, c.want); got != c.ok {
			t.Errorf("versionAtLeast(%q, %q) = %v, want %v", c.have, c.want, got, c.ok)
		}
	}
}
