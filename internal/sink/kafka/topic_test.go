package kafka

import (
	"strings"
	"testing"
)

func TestTopicNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tmpl, source, account, want string
	}{
		{"svc.{source}", "dns", "acme", "svc.dns"},
		{"svc.{source}.{account}", "dns", "Beta Corp/ü", "svc.dns.Beta_Corp___"},
		{"{account}-{source}", "edge_alerts", "org", "org-edge_alerts"},
		{"fixed", "dns", "acme", "fixed"},
		{"{source}", strings.Repeat("s", 300), "acme", strings.Repeat("s", 249)},
	} {
		tp, err := parseTopicTemplate(tt.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tt.tmpl, err)
		}
		if got := tp.name(tt.source, tt.account); got != tt.want {
			t.Errorf("%s with %s/%s = %q, want %q", tt.tmpl, tt.source, tt.account, got, tt.want)
		}
	}
	for _, bad := range []string{"", "a}b", "{source", "{Source}", "{}", "a b", "x/{source}"} {
		if _, err := parseTopicTemplate(bad); err == nil {
			t.Errorf("template %q accepted", bad)
		}
	}
}
