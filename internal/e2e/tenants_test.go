package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Issue 32: one process, three tenants, each on its own simulator with its
// own key and edge token, the three simulators serving byte-identical
// data (the same seed). Each tenant is its own world: its output, under
// out/<tenant>/, is complete against its own simulator's truth (C8) with
// no copy, every envelope names its tenant, the same record ids are stored
// for each tenant (no merge), and no simulator answered 429 (each tenant
// has its own budget). Then one tenant's key and edge token are revoked:
// the other two stay fresh (their watermarks move on past the revocation)
// while the revoked one fails alone, named in /state.
func TestTenantsEachCompleteAgainstItsOwnSimulatorAndARevokedKeyStopsOnlyItsTenant(t *testing.T) {
	t.Parallel()
	tenants := []harness.Tenant{
		{Name: "alpha", KeyID: "key-alpha", Secret: "secret-alpha", EdgeToken: "edge-alpha"},
		{Name: "beta", KeyID: "key-beta", Secret: "secret-beta", EdgeToken: "edge-beta"},
		{Name: "gamma", KeyID: "key-gamma", Secret: "secret-gamma", EdgeToken: "edge-gamma"},
	}
	for i := range tenants {
		tenants[i].Sim = harness.StartSim(t, harness.QuickRates, harness.TenantKeys(tenants[i]))
	}
	sources := []string{"dns", "user_logins", "edge_audit_events"}
	start := time.Now().UTC().Add(-6 * time.Hour).Truncate(time.Minute)
	addr := harness.FreeAddr(t)
	c := harness.New(t, harness.Config{Sim: tenants[0].Sim, Tenants: tenants, Start: start, Sources: sources, Metrics: addr})
	perTenant := len(c.Streams()) - len(harness.EdgeSources()) + 1 // an edge source is one stream per token
	// check: each tenant's token and access, with the secrets of the
	// environment, none of them printed.
	code, out := c.CLI(t, nil, "check")
	var checks map[string]string
	if code != 0 || strings.Count(out, "--    tenant beta") != 2 || strings.Count(out, "ok    core API token") != 3 {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	for _, tn := range tenants {
		if strings.Contains(out, tn.Secret) || strings.Contains(out, tn.EdgeToken) {
			t.Errorf("check prints the secret or token of %s:\n%s", tn.Name, out)
		}
	}
	p := c.Start(t)
	defer p.Stop(30 * time.Second)

	// Every stream of every tenant caught up.
	harness.WaitState(t, p, addr, 3*time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
		n := 0
		for _, s := range st {
			if s.CaughtUp && s.Watermark.After(start) {
				n++
			}
		}
		return n == 3*perTenant && len(st) == 3*perTenant, fmt.Sprintf("%d of %d streams caught up, want %d", n, len(st), 3*perTenant)
	})

	// Revoke beta: its key's secret and its edge token change, its tokens die.
	before := harness.LiveState(addr)
	beta := tenants[1]
	if err := beta.Sim.SetKeySecret(beta.KeyID, "rotated-away"); err != nil {
		t.Fatal(err)
	}
	if err := beta.Sim.SetEdgeToken("rotated-away-edge"); err != nil {
		t.Fatal(err)
	}
	beta.Sim.RevokeTokens("sim-admin")

	// alpha and gamma stay fresh: every stream commits past its watermark
	// at the revocation; beta's streams fail with the refused credential.
	harness.WaitState(t, p, addr, 3*time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
		fresh, failing := 0, 0
		var stale []string
		for k, s := range st {
			switch k.Tenant {
			case "alpha", "gamma":
				if s.Watermark.After(before[k].Watermark) {
					fresh++
				} else {
					stale = append(stale, fmt.Sprintf("%s at %s (%s)", k, s.Watermark.Format(time.RFC3339), s.LastError))
				}
			case "beta":
				if s.LastError != "" || s.Blocked != nil {
					failing++
				}
			}
		}
		return fresh == 2*perTenant && failing > 0, fmt.Sprintf("%d of %d alpha and gamma streams moved on (not %v); %d beta streams failing", fresh, 2*perTenant, stale, failing)
	})
	// Readiness names the failing tenant without making the pod unready:
	// the collector serves the other two.
	code, checks = harness.Ready(addr)
	if code != 200 || checks["tenant:beta"] == "ok" || checks["tenant:alpha"] != "ok" || checks["tenants"] != "ok" {
		t.Errorf("/readyz %d: %v; want 200 with tenant:beta failing alone", code, checks)
	}
	// Metrics: one series per tenant's stream, labelled tenant; the
	// scrape holds no two series of one name and labels (it would fail).
	body, code := harness.HTTPGet("http://" + addr + "/metrics")
	for _, want := range []string{`collector_rows_delivered_total{account="acme",source="dns",tenant="alpha"}`,
		`collector_stream_last_commit_timestamp_seconds{account="acme",source="dns",tenant="gamma"}`,
		`collector_watermark_lag_seconds{account="acme",source="dns",tenant="beta"}`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics %d lacks %s", code, want)
		}
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Tail(20))
	}

	wms := c.Watermarks(t)
	outs := map[string]*harness.Output{}
	for i, tn := range tenants {
		dir := filepath.Join(c.OutDir(), tn.Name)
		harness.EachEnvelope(t, dir, func(e *harness.Envelope, _ []byte) {
			if e.Tenant != tn.Name {
				t.Fatalf("an envelope under %s names tenant %q", dir, e.Tenant)
			}
		})
		out := harness.ReadFileSink(t, dir)
		n := harness.CompareWithTruth(t, tn.Sim, out, c.Streams(), start, harness.TenantOnly(wms, tn.Name))
		if d := out.Duplicates(); d != 0 {
			t.Errorf("%s: %d copies", tn.Name, d)
		}
		var limited int64
		for _, cnt := range tn.Sim.Stats().Counters {
			limited += cnt.RateLimited
		}
		if limited != 0 {
			t.Errorf("%s: its simulator answered 429 %d times", tn.Name, limited)
		}
		if i != 1 && !wms[record.Stream{Tenant: tn.Name, Source: "dns", Account: "acme"}].Watermark.After(before[record.Stream{Tenant: tn.Name, Source: "dns", Account: "acme"}].Watermark) {
			t.Errorf("%s: dns/acme not fresh after the revocation", tn.Name)
		}
		outs[tn.Name] = out
		t.Logf("%s: %d records, complete against its simulator's truth; 0 copies, 0 x 429", tn.Name, n)
	}
	// Byte-identical data: the same ids are stored once for each tenant.
	k := record.Stream{Source: "dns", Account: "acme"}
	common := 0
	for id := range outs["alpha"].IDs[k] {
		if outs["gamma"].IDs[k][id] == 1 {
			common++
		}
	}
	if common == 0 {
		t.Errorf("alpha and gamma share no dns/acme id: the simulators' data differ, the test proves no separation")
	}
	t.Logf("dns/acme: %d ids stored for both alpha and gamma", common)
}
