package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/shard"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Issue 32: a shard that owns none of the tenants (COUNT above the
// tenants, or a StatefulSet scaled before the tenants were added) runs
// idle instead of refusing to start, which in Kubernetes is a crash loop:
// the binary stays up, logs one warning, serves /readyz ready (its check
// "shard" says the shard is empty), /metrics with
// collector_shard_owned_tenants 0, and /state with no stream and the
// headers of its shard; `state` says it owns no tenant. A restart with a
// tenant the shard owns (the tenant added) collects it.
func TestEmptyShardRunsIdle(t *testing.T) {
	t.Parallel()
	const count = 4
	// Two tenants, and a shard of 4 that owns neither; a third name it owns.
	names := []string{"alpha", "beta"}
	empty := -1
	for i := range count {
		if shard.Owner(names[0], count) != i && shard.Owner(names[1], count) != i {
			empty = i
			break
		}
	}
	added := ""
	for i := 0; added == ""; i++ {
		if n := fmt.Sprintf("org%02d", i); shard.Owner(n, count) == empty {
			added = n
		}
	}
	sim := harness.StartSim(t, harness.QuickRates)
	tenants := []harness.Tenant{{Name: names[0], Sim: sim}, {Name: names[1], Sim: sim}}
	start := time.Now().UTC().Add(-1 * time.Hour).Truncate(time.Minute)
	dir, addr := t.TempDir(), harness.FreeAddr(t)
	spec := fmt.Sprintf("%d/%d", empty, count)
	cfg := harness.Config{Sim: sim, Tenants: tenants, Start: start, Sources: []string{"dns"}, Dir: dir, Metrics: addr,
		Env: []string{"COLLECTOR_SHARD=" + spec}}
	c := harness.New(t, cfg)
	p := c.Start(t)

	// Ready, not just up: /readyz answers 200 and names the empty shard.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, checks := harness.Ready(addr)
		if code == http.StatusOK {
			if !strings.Contains(checks["shard"], "none of 2 tenants") {
				t.Errorf("/readyz checks %v: no check shard naming the empty shard", checks)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz of the empty shard %s: %d %v\n%s", spec, code, checks, p.Tail(20))
		}
		select {
		case <-p.Exited():
			t.Fatalf("the empty shard %s exited (%v)\n%s", spec, p.Err(), p.Tail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
	resp, err := http.Get("http://" + addr + "/state")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Collector-Shard"); resp.StatusCode != http.StatusOK || got != spec || resp.Header.Get("Collector-Shard-Tenants") != "" {
		t.Errorf("/state: %d, Collector-Shard %q, Collector-Shard-Tenants %q", resp.StatusCode, got, resp.Header.Get("Collector-Shard-Tenants"))
	}
	if st := harness.LiveState(addr); st == nil || len(st) != 0 {
		t.Errorf("/state of the empty shard: %v, want an empty list", st)
	}
	metrics, _ := harness.HTTPGet("http://" + addr + "/metrics")
	if want := fmt.Sprintf(`collector_shard_owned_tenants{shard=%q,tenants="2"} 0`, spec); !strings.Contains(metrics, want) {
		t.Errorf("/metrics has no %s", want)
	}
	if code, out := c.CLI(t, nil, "state"); code != 0 || !strings.Contains(out, fmt.Sprintf("# shard %s: none of 2 tenants", spec)) {
		t.Errorf("state of the empty shard: exit %d\n%s", code, out)
	}
	if err := p.Stop(30 * time.Second); err != nil {
		t.Errorf("stop of the empty shard: %v\n%s", err, p.Tail(20))
	}
	if n := harness.CountLogs(p.Logs(), "this shard owns none of the tenants: it runs idle until a restart with more tenants or fewer shards (docs/tenants.md, Shards)"); n != 1 {
		t.Errorf("%d warnings of the empty shard, want 1\n%s", n, p.Tail(20))
	}

	// The tenant added: the restarted shard owns and collects it.
	cfg.Tenants = append(tenants, harness.Tenant{Name: added, Sim: sim})
	c = harness.New(t, cfg)
	c.RunOnce(t, 4*time.Minute)
	got := tenantFiles(t, c.OutDir())
	if got[added] == 0 || got[names[0]] != 0 || got[names[1]] != 0 {
		t.Errorf("after the restart with %s, shard %s wrote files %v: want %s's only", added, spec, got, added)
	}
}
