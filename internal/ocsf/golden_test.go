package ocsf_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/ocsf"
	"github.com/svcexport/collector/internal/record"
)

var (
	update  = flag.Bool("update", false, "rewrite testdata/golden from testdata/records")
	capture = flag.Bool("capture", false, "rewrite testdata/records from the simulator (seed 1)")
)

// kind names what makes a record worth a golden file: its shape, not its
// values.
func kind(source string, rec map[string]any) string {
	switch source {
	case "changed_files":
		return fmt.Sprint(rec["threatInfo"] == nil)
	case "connections":
		eps, _ := rec["endpointDetails"].([]any)
		return fmt.Sprint(len(eps) > 1)
	case "user_logins":
		return fmt.Sprint(rec["activityType"])
	case "agent_info":
		return fmt.Sprint(strings.ContainsFunc(fmt.Sprint(rec["hostname"]), func(r rune) bool { return r > 127 }))
	case "audit_logs":
		return fmt.Sprint(rec["accountName"], rec["userAction"] == "Login")
	case "cloud_activities":
		em, _ := rec["eventMap"].(map[string]any)
		rules, _ := em["RulesTriggered"].([]any)
		return fmt.Sprint(len(rules) > 0)
	case "edge_audit_events":
		return fmt.Sprint(rec["method"] == "PATCH")
	case "edge_alerts":
		return fmt.Sprint(rec["status"])
	case "dns":
		return fmt.Sprint(rec["dnsServerIp"])
	}
	return ""
}

// captureRecords writes, per source, the first record of each kind (three
// at most) that
// the simulator serves with seed 1, as "account<TAB>record" lines.
func captureRecords(t *testing.T) {
	envs := simEnvelopes(t, 1)
	for _, source := range ocsf.Sources() {
		var out bytes.Buffer
		seen := map[string]bool{}
		for _, e := range envs[source] {
			rec, _ := members(t, e.Record)
			k := e.Account + "/" + kind(source, rec)
			if seen[k] || len(seen) == 3 {
				continue
			}
			seen[k] = true
			fmt.Fprintf(&out, "%s\t%s\n", e.Account, e.Record)
		}
		if err := os.WriteFile(filepath.Join("testdata", "records", source+".ndjson"), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGolden maps the records under testdata/records and compares the
// events with testdata/golden, which a person has read (go test -update
// rewrites them; review the diff).
func TestGolden(t *testing.T) {
	if *capture {
		captureRecords(t)
	}
	s := loadSchema(t)
	m := ocsf.New(ocsf.Options{})
	for _, source := range ocsf.Sources() {
		t.Run(source, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "records", source+".ndjson"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got bytes.Buffer
			got.WriteString("[\n")
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			n := 0
			for sc.Scan() {
				account, raw, _ := strings.Cut(sc.Text(), "\t")
				var b record.Builder
				e, _ := b.Build(source, account, timeField(source), windowStart, windowEnd, simNow, []byte(raw))
				out, fallbacks, err := m.Append(nil, &e)
				if err != nil {
					t.Fatal(err)
				}
				checkEvent(t, s, &e, out, fallbacks)
				if n > 0 {
					got.WriteString(",\n")
				}
				got.WriteString("  ")
				json.Indent(&got, out, "  ", "  ")
				n++
			}
			got.WriteString("\n]\n")
			if n == 0 {
				t.Fatal("no records")
			}
			path := filepath.Join("testdata", "golden", source+".json")
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s differs from the mapping (go test -run TestGolden -update, then review the diff):\n%s", path, got.Bytes())
			}
		})
	}
}
