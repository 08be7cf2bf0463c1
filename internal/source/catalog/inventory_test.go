package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/secret"
)

// agent_info is read as an inventory by default ("changed", every hour);
// other sources are not, and its keys are its own.
func TestConfig_AgentInfoIsAnInventoryByDefault(t *testing.T) {
	t.Parallel()
	s := DefaultConfig().Sources
	if a := s.Resolve(SourceAgentInfo); a.Inventory != InventoryChanged || a.InventoryInterval != time.Hour || !a.ReadsInventory() {
		t.Errorf("agent_info: inventory %q every %s, want changed every 1h", a.Inventory, a.InventoryInterval)
	}
	if d := s.Resolve(SourceDNS); d.Inventory != InventoryOff || d.ReadsInventory() {
		t.Errorf("dns: inventory %q, want off", d.Inventory)
	}
	all, day := "all", 24*time.Hour
	s[SourceAgentInfo] = SourceOverride{Inventory: &all, InventoryInterval: &day}
	if a := s.Resolve(SourceAgentInfo); a.Inventory != InventoryAll || a.InventoryInterval != day {
		t.Errorf("agent_info with its own block: %q every %s", a.Inventory, a.InventoryInterval)
	}
	// The default block reaches agent_info only.
	s = SourcesConfig{DefaultSourcesKey: {Inventory: &all}}
	if a, d := s.Resolve(SourceAgentInfo), s.Resolve(SourceDNS); a.Inventory != InventoryAll || d.Inventory != InventoryOff {
		t.Errorf("inventory: all in the default block: agent_info %q, dns %q; want all and off", a.Inventory, d.Inventory)
	}
}

func TestConfig_InventoryKeysAreValidated(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	dur := func(d time.Duration) *time.Duration { return &d }
	for _, c := range []struct {
		name    string
		sources SourcesConfig
		want    string
	}{
		{"an unknown mode", SourcesConfig{SourceAgentInfo: {Inventory: str("sometimes")}},
			`sources.agent_info.inventory: unknown mode "sometimes" (changed, all or off)`},
		{"an interval under a minute", SourcesConfig{SourceAgentInfo: {InventoryInterval: dur(time.Second)}},
			"sources.agent_info.inventory_interval: must be at least 1m"},
		{"a source that is no inventory", SourcesConfig{SourceDNS: {Inventory: str("changed")}},
			"sources.dns.inventory: only agent_info can be read as an inventory"},
		{"a bad mode in the default block", SourcesConfig{DefaultSourcesKey: {Inventory: str("yes")}},
			`sources.default.inventory: unknown mode "yes"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://x", "k", secret.New("s")
			for k, v := range c.sources {
				cfg.Sources[k] = v
			}
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant it to say %q", err, c.want)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://x", "k", secret.New("s")
	cfg.Sources[SourceAgentInfo] = SourceOverride{Inventory: str("off"), InventoryInterval: dur(time.Second)}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("inventory off with any interval: %v", err)
	}
}

// The walk asks the search without timeFilter, with the source's filters
// and returns.
func TestSpec_InventoryPageHasNoTimeFilter(t *testing.T) {
	t.Parallel()
	spec, _ := LookupSpec(SourceAgentInfo)
	s := DefaultSource()
	s.Filters = []Filter{{Expression: "eq", Field: "status", Value: "ACTIVE"}}
	u, body, err := spec.InventoryPage(s)
	if err != nil || u != "/api/v2/AgentInfo/search" || string(body) != `{"filters":[{"expression":"eq","field":"status","value":"ACTIVE"}]}` {
		t.Fatalf("InventoryPage = %q, %s, %v", u, body, err)
	}
	dns, _ := LookupSpec(SourceDNS)
	if _, _, err := dns.InventoryPage(s); err == nil {
		t.Fatal("dns is no inventory, and InventoryPage said nothing")
	}
}
