package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// tenantVerifyReport is `verify --json` of a collector with tenants: each
// row names its tenant.
type tenantVerifyReport struct {
	Rows []struct {
		Tenant string `json:"tenant"`
		verifyRow
	} `json:"rows"`
	Gaps    int   `json:"gaps"`
	Missing int64 `json:"missing"`
}

// Issue 32: verify of a collector with tenants, two tenants on two
// simulators serving byte-identical data (same record ids) with their own
// keys. Without --tenant every tenant is verified against its own
// simulator, each row under its tenant; --tenant verifies one; records
// removed from one tenant's output are a gap of that tenant only, though
// the other tenant's output holds the same records.
func TestVerifyEachTenantAgainstItsOwnAPI(t *testing.T) {
	t.Parallel()
	tenants := []harness.Tenant{
		{Name: "alpha", KeyID: "key-alpha", Secret: "secret-alpha", EdgeToken: "edge-alpha"},
		{Name: "beta", KeyID: "key-beta", Secret: "secret-beta", EdgeToken: "edge-beta"},
	}
	sims := map[string]*apisim.Server{}
	for i := range tenants {
		tenants[i].Sim = harness.StartSim(t, harness.QuickRates, harness.TenantKeys(tenants[i]))
		sims[tenants[i].Name] = tenants[i].Sim
	}
	start := time.Now().UTC().Add(-30 * time.Hour).Truncate(time.Hour)
	col := harness.New(t, harness.Config{Sim: tenants[0].Sim, Tenants: tenants, Start: start, Sources: []string{"dns", "edge_alerts"}, NoFsync: true})
	col.RunOnce(t, 3*time.Minute)

	run := func(args ...string) (int, tenantVerifyReport, string) {
		t.Helper()
		code, stdout, stderr := col.CLIOut(t, nil, append([]string{"verify", "--yes", "--json"}, args...)...)
		var rep tenantVerifyReport
		if code == 0 || code == 1 {
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("verify exit %d: stdout is no report (%v):\n%s\nstderr:\n%s", code, err, stdout, harness.Tail(stderr, 20))
			}
		}
		return code, rep, stdout + stderr
	}
	// check: each row's API count is its own tenant's simulator's truth,
	// and its status ok but for gaps ("tenant source/account day").
	check := func(rep tenantVerifyReport, gaps map[string]int64) map[string]int {
		t.Helper()
		rows := map[string]int{}
		for _, r := range rep.Rows {
			rows[r.Tenant]++
			sim := sims[r.Tenant]
			if sim == nil {
				t.Fatalf("a row of tenant %q", r.Tenant)
			}
			key := fmt.Sprintf("%s %s/%s %s", r.Tenant, r.Source, r.Account, r.Day)
			if want := truthOf(sim, r.verifyRow); r.API != want {
				t.Errorf("%s: verify counted %d at the API, its simulator's /_truth says %d", key, r.API, want)
			}
			want := "ok"
			if gaps[key] > 0 {
				want = "gap"
			}
			if r.API-r.Delivered != gaps[key] || r.Status != want {
				t.Errorf("%s: API %d, delivered %d, status %s; want %d missing", key, r.API, r.Delivered, r.Status, gaps[key])
			}
		}
		return rows
	}

	code, rep, out := run()
	if code != 0 || rep.Gaps != 0 {
		t.Fatalf("verify of complete outputs: exit %d, %d gaps\n%s", code, rep.Gaps, out)
	}
	rows := check(rep, nil)
	if rows["alpha"] == 0 || rows["alpha"] != rows["beta"] || len(rows) != 2 {
		t.Fatalf("rows by tenant %v: want as many of alpha as of beta, none else\n%s", rows, out)
	}

	day := plantFileGap(t, filepath.Join(col.OutDir(), "beta"), "dns", "acme", 5)
	code, rep, out = run()
	if code != 1 || rep.Gaps != 1 || rep.Missing != 5 {
		t.Fatalf("verify with 5 records of beta missing: exit %d, %d gaps, %d missing\n%s", code, rep.Gaps, rep.Missing, out)
	}
	check(rep, map[string]int64{"beta dns/acme " + day: 5})

	code, rep, out = run("--tenant", "alpha")
	if code != 0 || rep.Gaps != 0 {
		t.Fatalf("verify --tenant alpha: exit %d, %d gaps\n%s", code, rep.Gaps, out)
	}
	if rows := check(rep, nil); rows["alpha"] == 0 || len(rows) != 1 {
		t.Errorf("verify --tenant alpha: rows by tenant %v", rows)
	}
	code, _, out = run("--tenant", "gamma")
	if code != 2 || !strings.Contains(out, `--tenant: no tenant named "gamma" (alpha, beta)`) {
		t.Errorf("verify --tenant gamma: exit %d, want 2 naming the tenants\n%s", code, out)
	}
	for _, tn := range tenants {
		if strings.Contains(out, tn.Secret) {
			t.Errorf("verify prints the secret of %s", tn.Name)
		}
	}

	// check: each tenant's token line names its tenant.
	code, out = col.CLI(t, nil, "check")
	for _, tn := range tenants {
		if code != 0 || !tokenLogOf(out, tn.Name) {
			t.Errorf("check: exit %d; no \"API token obtained\" line with tenant=%s:\n%s", code, tn.Name, out)
		}
	}
	// state --reset names the tenant: beta's dns is forgotten, alpha's
	// stays (verify still finds it complete); without --tenant it is
	// refused, naming the tenants.
	code, out = col.CLI(t, nil, "state", "--reset", "dns")
	if code == 0 || !strings.Contains(out, "give --tenant NAME") || !strings.Contains(out, "alpha, beta") {
		t.Errorf("state --reset dns with tenants and no --tenant: exit %d\n%s", code, out)
	}
	betaDNS := 0
	for k := range col.Watermarks(t) {
		if k.Tenant == "beta" && k.Source == "dns" {
			betaDNS++
		}
	}
	code, out = col.CLI(t, nil, "state", "--reset", "dns", "--tenant", "beta")
	if code != 0 || betaDNS == 0 || !strings.Contains(out, fmt.Sprintf("reset %d stream(s) of dns of tenant beta", betaDNS)) {
		t.Fatalf("state --reset dns --tenant beta: exit %d\n%s", code, out)
	}
	wms := col.Watermarks(t)
	for k := range wms {
		if k.Tenant == "beta" && k.Source == "dns" {
			t.Errorf("%s still in the checkpoint after its reset", k)
		}
	}
	if _, ok := wms[record.Stream{Tenant: "alpha", Source: "dns", Account: "acme"}]; !ok {
		t.Error("alpha's dns/acme went with beta's reset")
	}
}

// tokenLogOf reports whether the log out has an "API token obtained" line
// naming tenant.
func tokenLogOf(out, tenant string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "API token obtained") && (strings.Contains(l, "tenant="+tenant) || strings.Contains(l, `"tenant":"`+tenant+`"`)) {
			return true
		}
	}
	return false
}
