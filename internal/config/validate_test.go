package config

import (
	"strings"
	"testing"
)

// api.base_url and edge.base_url are scheme://host[:port][/path]: a query
// (a ?sig=... would be printed verbatim by check and the logs) or a
// fragment is a configuration error naming the key (issue 20, item 7).
func TestLoadWith_ABaseURLWithAQueryIsAKeyError(t *testing.T) {
	t.Parallel()
	env := []string{"COLLECTOR_API__SECRET=s", "COLLECTOR_EDGE__TOKEN=t"}
	for _, c := range []struct{ name, yaml, key string }{
		{"api", "api:\n  base_url: https://api.example.test/v2?sig=s3cr3t\n  key_id: k\n", "api.base_url"},
		{"api fragment", "api:\n  base_url: https://api.example.test#s3cr3t\n  key_id: k\n", "api.base_url"},
		{"edge", validBase + "edge:\n  base_url: https://edge.example.test/?sig=s3cr3t\n", "edge.base_url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadWith(writeFile(t, c.yaml), env, LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), c.key+": must not have a query (?...) or a fragment (#...)") {
				t.Fatalf("err = %v, want a %s problem", err, c.key)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("the error shows the URL: %v", err)
			}
		})
	}
}

// A between filter with its boundaries reversed, or equal (the seed: "the
// upper boundary must be greater than the lower one"), is a configuration
// error naming the filter's values (issue 20, item 9).
func TestLoadWith_BetweenWithTheBoundsReversedIsAKeyError(t *testing.T) {
	t.Parallel()
	for _, values := range []string{`["200", "100"]`, `["2026-02-01", "2026-01-01"]`, `["7", "7"]`} {
		t.Run(values, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, validBase+"sources:\n  dns:\n    filters:\n      - {expression: between, field: mid, values: "+values+"}\n")
			_, err := LoadWith(p, []string{"COLLECTOR_API__SECRET=s"}, LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), "sources.dns.filters[0].values: between's upper boundary") {
				t.Fatalf("err = %v", err)
			}
		})
	}
	p := writeFile(t, validBase+"sources:\n  dns:\n    filters:\n      - {expression: between, field: mid, values: [\"100\", \"200\"]}\n")
	if _, err := LoadWith(p, []string{"COLLECTOR_API__SECRET=s"}, LoadOptions{}); err != nil {
		t.Fatalf("between in order: %v", err)
	}
}
