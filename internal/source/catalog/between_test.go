package catalog

import (
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/secret"
)

// The seed: "between: the upper boundary must be greater than the lower
// one". A filter whose lower boundary is above the upper one, or equal to
// it, is refused at load time naming its values key (issue 20, item 9);
// boundaries whose order is not known (text) pass unless equal.
func TestConfig_BetweenNeedsTheUpperBoundaryGreater(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lo, hi string
		bad    bool
	}{
		{"3", "9", false},
		{"9", "3", true},
		{"5", "5", true},
		{"5", "5.0", true},
		{"-1.5", "-1.25", false},
		{"10", "9", true}, // numbers, not text: "10" < "9" as strings
		{"1e3", "999", true},
		{"2026-01-01", "2026-02-01", false},
		{"2026-02-01", "2026-01-01", true},
		{"2026-01-01T10", "2026-01-01T09", true},
		{"2026-01-01", "2026-01-01T00:00:00Z", true}, // the same instant
		{"2026-01-01T00:00:00.500Z", "2026-01-01T00:00:00Z", true},
		{"2026-01-01T00:00:00Z", "2026-01-01T00:00:00.001Z", false},
		{"1767225600000", "1767225600001", false}, // epoch milliseconds
		{"b", "a", false},                         // text: the API's order
		{"10.0.0.9", "10.0.0.10", false},          // addresses: the API's order
		{"same", "same", true},
		{"9", "2026-01-01", false}, // a number and a time: unknown
	} {
		t.Run(c.lo+"_"+c.hi, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://x", "k", secret.New("s")
			cfg.Sources["dns"] = SourceOverride{Filters: []Filter{
				{Expression: "eq", Field: "fqdn", Value: "example.com"},
				{Expression: "between", Field: "mid", Values: []string{c.lo, c.hi}},
			}}
			err := cfg.Validate()
			if !c.bad {
				if err != nil {
					t.Fatalf("between [%q, %q]: %v", c.lo, c.hi, err)
				}
				return
			}
			want := "sources.dns.filters[1].values: between's upper boundary"
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "greater than") {
				t.Fatalf("between [%q, %q]: %v, want %q", c.lo, c.hi, err, want)
			}
		})
	}
}
