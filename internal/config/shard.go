package config

import (
	"fmt"
	"strings"

	"github.com/svcexport/collector/internal/shard"
)

// Sharding is the part of the tenants a sharded collector runs
// (Config.ForShard).
type Sharding struct {
	// Shard is this collector's index among Count.
	Shard shard.Shard
	// Owned names the tenants it runs, in the order of "tenants"; Of is
	// how many the configuration has.
	Owned []string
	Of    int
}

// String is "shard 1/3: 2 of 5 tenants (acme, globex)", or "shard 4/5:
// none of 3 tenants" for an empty shard.
func (s Sharding) String() string {
	if s.Empty() {
		return fmt.Sprintf("shard %s: none of %d tenants", s.Shard, s.Of)
	}
	return fmt.Sprintf("shard %s: %d of %d tenants (%s)", s.Shard, len(s.Owned), s.Of, strings.Join(s.Owned, ", "))
}

// Empty reports a shard that owns none of the tenants (more shards than
// tenants, or shards added before the tenants): it runs idle (app.Run)
// rather than refusing to start, which in Kubernetes is a crash loop.
func (s Sharding) Empty() bool { return len(s.Owned) == 0 }

// Sharding returns what ForShard chose, and false for a collector that
// runs every tenant.
func (c Config) Sharding() (Sharding, bool) {
	if c.sharding == nil {
		return Sharding{}, false
	}
	return *c.sharding, true
}

// ForShard returns c with Tenants cut to the ones its key "shard" owns
// (package shard: rendezvous hashing of the name), taking an
// "ordinal/COUNT" index from hostname. Every command applies it, so that
// run, state and check of a shard see its tenants only. The one-tenant
// form is one collector: a COUNT above 1 without tenants is an error
// rather than two collectors reading one tenant twice. A shard that owns
// no tenant (more shards than tenants) is no error: its Config has no
// tenants and a Sharding that is Empty, and OwnsNoTenant says so to every
// command, since its empty Tenants is not the one-tenant form. Errors are
// KeyErrors of key shard.
func (c Config) ForShard(hostname string) (Config, error) {
	if c.Shard == "" {
		return c, nil
	}
	sh, err := shard.Resolve(c.Shard, hostname)
	if err != nil {
		return c, &KeyError{Key: "shard", Msg: err.Error()}
	}
	if !sh.Sharded() {
		return c, nil
	}
	if len(c.Tenants) == 0 {
		return c, &KeyError{Key: "shard", Msg: fmt.Sprintf("%s needs tenants: the one-tenant form runs in one collector (see docs/tenants.md)", sh)}
	}
	s := Sharding{Shard: sh, Of: len(c.Tenants)}
	var owned TenantList
	for _, t := range c.Tenants {
		if sh.Owns(t.Name) {
			owned = append(owned, t)
			s.Owned = append(s.Owned, t.Name)
		}
	}
	c.Tenants, c.sharding = owned, &s
	return c, nil
}

// OwnsNoTenant reports a configuration of tenants cut by ForShard to none
// of them (Sharding.Empty): there is nothing to collect, and its empty
// Tenants must not be read as the one-tenant form (SourceConfigs has
// none).
func (c Config) OwnsNoTenant() bool {
	return c.sharding != nil && c.sharding.Empty()
}
