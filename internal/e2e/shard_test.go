package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/shard"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// shardNames returns three tenant names that two shards and three shards
// both split with no empty shard (a shard that owns nothing would idle:
// the test would prove less), found from fixed candidates: the test is
// deterministic.
func shardNames(t *testing.T) []string {
	t.Helper()
	cand := make([]string, 16)
	for i := range cand {
		cand[i] = fmt.Sprintf("org%02d", i)
	}
	covers := func(names []string, n int) bool {
		seen := map[int]bool{}
		for _, name := range names {
			seen[shard.Owner(name, n)] = true
		}
		return len(seen) == n
	}
	for i := range cand {
		for j := i + 1; j < len(cand); j++ {
			for k := j + 1; k < len(cand); k++ {
				names := []string{cand[i], cand[j], cand[k]}
				if covers(names, 2) && covers(names, 3) {
					return names
				}
			}
		}
	}
	t.Fatal("no three candidates split over 2 and 3 shards")
	return nil
}

// union adds up outputs: what a tenant's shards delivered, phase by phase.
func union(outs ...*harness.Output) *harness.Output {
	u := harness.NewOutput()
	for _, o := range outs {
		for k, ids := range o.IDs {
			for id, n := range ids {
				for range n {
					u.Add(k, id, o.Times[id])
				}
			}
		}
	}
	return u
}

// tenantDirs counts, per tenant, the files a shard's file sink wrote
// under out/TENANT.
func tenantFiles(t *testing.T, out string) map[string]int {
	t.Helper()
	n := map[string]int{}
	ents, err := os.ReadDir(out)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		_ = filepath.WalkDir(filepath.Join(out, e.Name()), func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n[e.Name()]++
			}
			return err
		})
	}
	return n
}

// Issue 32: two shards, then three. Each shard is a collector of its own
// (own checkpoint, as a StatefulSet pod's volume, and own file sink
// output) with the same configuration of three tenants on three
// simulators; COLLECTOR_SHARD=i/N selects its tenants. In each phase
// every tenant is collected by exactly one shard (only its owner's
// output gains files of it). Between the phases every collector stops;
// each tenant whose owner changed moves with `state --export-tenant` on
// the old shard, `--import` on the new one and `--drop-tenant` on the
// old one. After the reshard each tenant's records, over both phases'
// outputs, are complete against its own simulator's truth with 0 copies.
func TestShardsTwoThenThreeMoveTenantsWithTheirProgress(t *testing.T) {
	t.Parallel()
	names := shardNames(t)
	tenants := make([]harness.Tenant, len(names))
	for i, name := range names {
		tenants[i] = harness.Tenant{Name: name, KeyID: "key-" + name, Secret: "secret-" + name, EdgeToken: "edge-" + name}
		tenants[i].Sim = harness.StartSim(t, harness.QuickRates, harness.TenantKeys(tenants[i]))
	}
	sources := []string{"dns", "user_logins", "edge_audit_events"}
	start := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Minute)
	root := t.TempDir()
	// The first phase stops 90 minutes short of now (lag), the second
	// collects up to now - 2m: each tenant's owner after the reshard has
	// records to write, a moved tenant from its imported progress.
	shardOf := func(i, n int) *harness.Collector {
		lag := 2 * time.Minute
		if n == 2 {
			lag = 90 * time.Minute
		}
		return harness.New(t, harness.Config{Sim: tenants[0].Sim, Tenants: tenants, Start: start, Sources: sources, Lag: lag,
			Dir: filepath.Join(root, fmt.Sprintf("shard-%d", i)), Env: []string{fmt.Sprintf("COLLECTOR_SHARD=%d/%d", i, n)}})
	}
	owners := func(n int) map[string]int {
		m := map[string]int{}
		for _, name := range names {
			m[name] = shard.Owner(name, n)
		}
		return m
	}
	// outs[phase][tenant] is what the owner's sink wrote in that phase
	// (its files, counted before and after).
	files := func(cs []*harness.Collector) []map[string]int {
		out := make([]map[string]int, len(cs))
		for i, c := range cs {
			out[i] = tenantFiles(t, c.OutDir())
		}
		return out
	}
	phase := func(n int, before []map[string]int) []*harness.Collector {
		cs := make([]*harness.Collector, n)
		for i := range cs {
			cs[i] = shardOf(i, n)
			cs[i].RunOnce(t, 4*time.Minute)
			code, out := cs[i].CLI(t, nil, "state")
			if code != 0 || !strings.Contains(out, fmt.Sprintf("# shard %d/%d: ", i, n)) {
				t.Errorf("state of shard %d/%d: exit %d, no shard line\n%s", i, n, code, out)
			}
		}
		after := files(cs)
		for _, name := range names {
			for i := range cs {
				was := 0
				if i < len(before) {
					was = before[i][name]
				}
				gained := after[i][name] > was
				if owns := owners(n)[name] == i; gained != owns {
					t.Errorf("%d shards: shard %d gained files of %s: %v; it owns it: %v", n, i, name, gained, owns)
				}
			}
		}
		return cs
	}

	two := phase(2, nil)
	before := files(two)

	// Every collector is stopped (run --once ended): move each tenant
	// whose owner changed, then start all three.
	moved := 0
	from, to := owners(2), owners(3)
	newShard := shardOf(2, 3)
	for _, name := range names {
		if from[name] == to[name] {
			continue
		}
		if to[name] != 2 {
			t.Fatalf("%s moves from %d to %d, not to the new shard", name, from[name], to[name])
		}
		file := filepath.Join(root, name+".json")
		old := shardOf(from[name], 3)
		if code, out := old.CLI(t, nil, "state", "--export-tenant", name, "--to", file); code != 0 {
			t.Fatalf("export %s: exit %d\n%s", name, code, out)
		}
		if code, out := newShard.CLI(t, nil, "state", "--import", file); code != 0 {
			t.Fatalf("import %s: exit %d\n%s", name, code, out)
		}
		if code, out := old.CLI(t, nil, "state", "--drop-tenant", name); code != 0 {
			t.Fatalf("drop %s: exit %d\n%s", name, code, out)
		}
		moved++
	}
	if moved == 0 {
		t.Fatal("no tenant moved: the test proves nothing")
	}
	three := phase(3, before)

	for ti, tn := range tenants {
		o2, o3 := two[from[tn.Name]], three[to[tn.Name]]
		dirs := []string{filepath.Join(o2.OutDir(), tn.Name)}
		if o2.OutDir() != o3.OutDir() {
			dirs = append(dirs, filepath.Join(o3.OutDir(), tn.Name))
		}
		var outs []*harness.Output
		for _, d := range dirs {
			if _, err := os.Stat(d); err == nil {
				outs = append(outs, harness.ReadFileSink(t, d))
			}
		}
		out := union(outs...)
		wms := o3.Watermarks(t)
		n := harness.CompareWithTruth(t, tenants[ti].Sim, out, o3.Streams(), start, harness.TenantOnly(wms, tn.Name))
		if d := out.Duplicates(); d != 0 {
			t.Errorf("%s: %d copies across the reshard", tn.Name, d)
		}
		for i, c := range three {
			if i == to[tn.Name] {
				continue
			}
			for k := range c.Watermarks(t) {
				if k.Tenant == tn.Name {
					t.Errorf("shard %d/3 still holds progress of %s (%s)", i, tn.Name, k)
				}
			}
		}
		t.Logf("%s: shard %d/2 then %d/3, %d records complete against its simulator's truth, 0 copies", tn.Name, from[tn.Name], to[tn.Name], n)
	}
}
