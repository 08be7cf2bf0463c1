package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/shard"
)

// Issue 32: "shard" (COLLECTOR_SHARD) cuts the tenants to the shard's:
// over the shards 0..N-1 every tenant runs in exactly one, the one
// package shard names; "ordinal/N" takes the index from the host name.
func TestForShardRunsEachTenantInExactlyOneShard(t *testing.T) {
	t.Parallel()
	yaml, env := threeTenants(t)
	for _, n := range []int{2, 3, 4} {
		seen := map[string]int{}
		for i := 0; i < n; i++ {
			cfg, err := Load(writeFile(t, yaml), append(env, fmt.Sprintf("COLLECTOR_SHARD=ordinal/%d", n)))
			if err != nil {
				t.Fatal(err)
			}
			host := fmt.Sprintf("collector-%d", i)
			cut, err := cfg.ForShard(host)
			if err != nil {
				t.Fatalf("%s of %d: %v", host, n, err)
			}
			s, ok := cut.Sharding()
			if !ok || s.Shard != (shard.Shard{Index: i, Count: n}) || s.Of != 3 || len(s.Owned) != len(cut.Tenants) {
				t.Errorf("%s: sharding %+v, %v; tenants %d", host, s, ok, len(cut.Tenants))
			}
			for _, sc := range cut.SourceConfigs() {
				seen[sc.Tenant]++
				if shard.Owner(sc.Tenant, n) != i {
					t.Errorf("shard %d/%d runs %s, whose owner is %d", i, n, sc.Tenant, shard.Owner(sc.Tenant, n))
				}
			}
		}
		for _, name := range []string{"alpha", "beta_2", "Gamma-3"} {
			if seen[name] != 1 {
				t.Errorf("%d shards: tenant %s runs in %d shards, want 1", n, name, seen[name])
			}
		}
	}
	// Unsharded: every tenant, no Sharding.
	cfg, err := Load(writeFile(t, yaml), env)
	if err != nil {
		t.Fatal(err)
	}
	if cut, err := cfg.ForShard("host"); err != nil || len(cut.Tenants) != 3 {
		t.Errorf("unsharded: %d tenants, %v", len(cut.Tenants), err)
	} else if _, ok := cut.Sharding(); ok {
		t.Error("unsharded: a Sharding")
	}
}

// The one-tenant form refuses a COUNT above 1 (two collectors would read
// one tenant twice); a bad spec, an ordinal-less host name and a shard
// are errors of key shard.
func TestForShardRefuses(t *testing.T) {
	t.Parallel()
	yaml, env := threeTenants(t)
	tenants, err := Load(writeFile(t, yaml), env)
	if err != nil {
		t.Fatal(err)
	}
	one := Default()
	for _, c := range []struct {
		cfg              Config
		spec, host, want string
	}{
		{one, "0/2", "h", "needs tenants"},
		{tenants, "3/2", "h", "INDEX"},
		{tenants, "ordinal/3", "collector", "ordinal"},
		{tenants, "ordinal/3", "collector-5", "INDEX"},
	} {
		c.cfg.Shard = c.spec
		_, err := c.cfg.ForShard(c.host)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "shard") {
			t.Errorf("%s on %s: %v, want an error of key shard with %q", c.spec, c.host, err, c.want)
		}
	}
	one.Shard = "0/1"
	if _, err := one.ForShard("h"); err != nil {
		t.Errorf("0/1 of the one-tenant form: %v", err)
	}
}

// A shard that owns none of the tenants (more shards than tenants, or a
// StatefulSet scaled before the tenants were added) is no error: it runs
// idle (app.Run) instead of crash-looping. Its configuration has no
// streams: its empty tenants are not read as the one-tenant form (whose
// top-level api is unset here).
func TestForShardEmptyShard(t *testing.T) {
	t.Parallel()
	yaml, env := threeTenants(t)
	cfg, err := Load(writeFile(t, yaml), env)
	if err != nil {
		t.Fatal(err)
	}
	empty := -1
	for i := range 64 {
		if !slices.ContainsFunc(cfg.Tenants, func(tc TenantConfig) bool { return shard.Owner(tc.Name, 64) == i }) {
			empty = i
			break
		}
	}
	cfg.Shard = fmt.Sprintf("%d/64", empty)
	cut, err := cfg.ForShard("h")
	if err != nil {
		t.Fatalf("%s: %v", cfg.Shard, err)
	}
	s, ok := cut.Sharding()
	if !ok || !s.Empty() || s.Of != 3 || !cut.OwnsNoTenant() {
		t.Fatalf("%s: sharding %+v, %v; OwnsNoTenant %v", cfg.Shard, s, ok, cut.OwnsNoTenant())
	}
	if want := fmt.Sprintf("shard %d/64: none of 3 tenants", empty); s.String() != want {
		t.Errorf("String: %q, want %q", s, want)
	}
	if sc := cut.SourceConfigs(); len(sc) != 0 {
		t.Errorf("SourceConfigs of an empty shard: %d (tenant %q), want none", len(sc), sc[0].Tenant)
	}
	if sc := cut.PlannedSourceConfigs(); len(sc) != 0 {
		t.Errorf("PlannedSourceConfigs of an empty shard: %d (tenant %q), want none", len(sc), sc[0].Tenant)
	}
	// A shard that owns a tenant, and an unsharded one, own some.
	cfg.Shard = ""
	if all, err := cfg.ForShard("h"); err != nil || all.OwnsNoTenant() {
		t.Errorf("unsharded: OwnsNoTenant %v, %v", all.OwnsNoTenant(), err)
	}
}
