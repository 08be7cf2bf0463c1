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
