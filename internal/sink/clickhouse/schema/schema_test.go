package schema

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
	n := Names{Database: "svc"}
	files := map[string]string{"database.sql": createDatabaseSQL(n) + "\n"}
	for _, spec := range Tables() {
		files[spec.Source+".sql"] = createTableSQL(n, spec)
		files[spec.Source+".insert.sql"] = InsertSQL(n, spec) + "\n"
	}
	files["edge_alerts"+ViewSuffix+".sql"] = latestAlertsViewSQL(n)
	files["dns.add_column.sql"] = addColumnSQL(n, "dns", tableOf("dns").Columns()[NumCommon+2]) + "\n" +
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
	n := Names{Database: "analytics", Prefix: "svc_"}
	for _, spec := range Tables() {
		ddl := createTableSQL(n, spec)
		if !strings.HasPrefix(ddl, "CREATE TABLE IF NOT EXISTS `analytics`.`svc_"+spec.Source+"`\n") {
			t.Errorf("DDL of %s does not name `analytics`.`svc_%s`:\n%s", spec.Source, spec.Source, ddl)
		}
		if !strings.HasPrefix(InsertSQL(n, spec), "INSERT INTO `analytics`.`svc_"+spec.Source+"` (") {
			t.Errorf("insert of %s: %s", spec.Source, InsertSQL(n, spec))
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
	for _, spec := range Tables() {
		seen := map[string]bool{}
		for _, c := range spec.Columns() {
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

func tableOf(source string) Table {
	for _, t := range Tables() {
		if t.Source == source {
			return t
		}
	}
	panic("no table for " + source)
}
