package source

import (
	"slices"
	"testing"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
)

// Streams needs no credential and lists exactly the streams Build makes
// pollers for, in the same order.
func TestStreams_AreThePollersOfBuildWithoutCredentials(t *testing.T) {
	t.Parallel()
	cfg := catalog.DefaultConfig()
	cfg.Accounts = []string{"acme", "acme-dev"}
	cfg.OrgAuditLogs = true
	cfg.Edge.BaseURL = "http://127.0.0.1:1/edge"
	off := false
	cfg.Sources[catalog.SourceConnections] = catalog.SourceOverride{Enabled: &off}
	streams := Streams(cfg) // no api.base_url, no key, no secret, no token
	// 6 enabled core sources x 2 accounts, audit logs of "org", and one
	// stream per edge source whatever the sub-accounts (C6).
	if len(streams) != 12+1+2 {
		t.Fatalf("%d streams: %v", len(streams), streams)
	}
	for _, s := range []record.Stream{
		{Source: catalog.SourceDNS, Account: "acme-dev"}, {Source: catalog.SourceAuditLogs, Account: OrgAccountName},
		{Source: catalog.SourceEdgeAlerts, Account: catalog.DefaultEdgeAccount},
	} {
		if !slices.Contains(streams, s) {
			t.Errorf("%v missing from %v", s, streams)
		}
	}
	if slices.Contains(streams, record.Stream{Source: catalog.SourceConnections, Account: "acme"}) {
		t.Error("a disabled source has streams")
	}

	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://127.0.0.1:1", "k", secret.New("s")
	cfg.Edge.Token = secret.New("t")
	set, err := Build(cfg, nil, Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	built := make([]record.Stream, len(set.Pollers))
	for i, p := range set.Pollers {
		built[i] = p.Stream()
	}
	if !slices.Equal(built, streams) {
		t.Fatalf("Build made %v, Streams says %v", built, streams)
	}
}

func TestStreams_NoAccountIsTheDefaultAccountAndNoEdgeURLNoEdgeStreams(t *testing.T) {
	t.Parallel()
	streams := Streams(catalog.DefaultConfig())
	if len(streams) != 7 {
		t.Fatalf("%d streams: %v", len(streams), streams)
	}
	for _, s := range streams {
		if s.Account != DefaultAccount {
			t.Fatalf("stream %v, want account %q", s, DefaultAccount)
		}
		if spec, _ := catalog.LookupSpec(s.Source); spec.Edge {
			t.Fatalf("edge stream %v without edge.base_url", s)
		}
	}
}
