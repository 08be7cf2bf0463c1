package harness

import (
	"fmt"
	"strings"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
)

// Tenant is one entry of a Config's tenants: a platform tenant the
// collector reads from its own simulator with its own credentials.
type Tenant struct {
	// Name is tenants[i].name.
	Name string
	// Sim is the tenant's simulator (core and edge API).
	Sim *apisim.Server
	// KeyID, Secret and EdgeToken are the tenant's credentials; "" takes
	// the simulator's defaults (KeyID, Secret, EdgeToken).
	KeyID, Secret, EdgeToken string
}

func (t Tenant) keyID() string { return or(t.KeyID, KeyID) }

func (t Tenant) secret() string { return or(t.Secret, Secret) }

func (t Tenant) edgeToken() string { return or(t.EdgeToken, EdgeToken) }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TenantKeys returns an apisim option that gives a simulator the
// tenant's credentials t (its first key's id and secret, its edge token),
// for StartSim.
func TenantKeys(t Tenant) func(*apisim.Config) {
	return func(c *apisim.Config) {
		c.Keys[0].KeyID, c.Keys[0].Secret = t.keyID(), t.secret()
		c.EdgeToken = t.edgeToken()
	}
}

// tenantsYAML writes the tenants section of cfg (rate: the api and edge
// rate lines, indented for a section).
func tenantsYAML(cfg Config, rate string) string {
	indent := func(s string) string {
		if s == "" {
			return ""
		}
		lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
		return "    " + strings.Join(lines, "    ") + "\n"
	}
	var b strings.Builder
	b.WriteString("tenants:\n")
	for _, t := range cfg.Tenants {
		fmt.Fprintf(&b, "  - name: %s\n    api:\n      base_url: %s\n      key_id: %s\n", t.Name, t.Sim.URL(), t.keyID())
		if cfg.PageRows > 0 {
			fmt.Fprintf(&b, "      page_rows: %d\n", cfg.PageRows)
		}
		b.WriteString(indent(rate))
		fmt.Fprintf(&b, "    edge:\n      base_url: %s\n%s", t.Sim.EdgeURL(), indent(rate))
		fmt.Fprintf(&b, "    accounts: [%s]\n", strings.Join(cfg.Accounts, ", "))
	}
	return b.String()
}

// tenantsEnv is every tenant's secret and edge token as the environment
// gives them (COLLECTOR_TENANTS__<i>__API__SECRET, ...__EDGE__TOKEN).
func tenantsEnv(ts []Tenant) []string {
	var out []string
	for i, t := range ts {
		out = append(out, fmt.Sprintf("COLLECTOR_TENANTS__%d__API__SECRET=%s", i, t.secret()),
			fmt.Sprintf("COLLECTOR_TENANTS__%d__EDGE__TOKEN=%s", i, t.edgeToken()))
	}
	return out
}

// TenantOnly returns the states of wms (Watermarks, LiveWatermarks) of
// tenant's streams, keyed without the tenant, as the harness's
// comparisons of one simulator take them.
func TenantOnly(wms map[record.Stream]checkpoint.State, tenant string) map[record.Stream]checkpoint.State {
	out := map[record.Stream]checkpoint.State{}
	for k, st := range wms {
		if k.Tenant == tenant {
			k.Tenant = ""
			out[k] = st
		}
	}
	return out
}

// TenantStreams returns streams with every stream's tenant set to tenant.
func TenantStreams(streams []record.Stream, tenant string) []record.Stream {
	out := make([]record.Stream, len(streams))
	for i, k := range streams {
		k.Tenant = tenant
		out[i] = k
	}
	return out
}
