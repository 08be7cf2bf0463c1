package source

import (
	"slices"
	"testing"
	"time"

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

// Resolve gives each stream what the configuration says of it and of no
// other: its source's own block over "default", its account and
// Account-Name header (none for the org and edge streams, C2 and C6), the
// API and edge sections, the recheck configuration with edge.max_rows.
func TestResolve_EachStreamGetsItsOwnSourceBlockAccountAndSections(t *testing.T) {
	t.Parallel()
	cfg := catalog.DefaultConfig()
	cfg.Accounts = []string{"acme"}
	cfg.OrgAuditLogs = true
	cfg.Edge.BaseURL, cfg.Edge.MaxRows = "http://127.0.0.1:1/edge", 777
	cfg.API.MaxPages = 42
	lag := 7 * time.Minute
	cfg.Sources[catalog.SourceDNS] = catalog.SourceOverride{Lag: &lag, Recheck: &[]catalog.RecheckPoint{catalog.RecheckPoint(time.Hour)}}
	pcs := Resolve(cfg)
	if got, want := len(pcs), len(Streams(cfg)); got != want {
		t.Fatalf("Resolve gives %d streams, Streams %d", got, want)
	}
	for _, pc := range pcs {
		if pc.Settings.Lag != cfg.Sources.Resolve(pc.Spec.Name).Lag {
			t.Errorf("%s/%s: lag %v, its block says %v", pc.Spec.Name, pc.Account, pc.Settings.Lag, cfg.Sources.Resolve(pc.Spec.Name).Lag)
		}
		if pc.API.MaxPages != 42 || pc.Edge.BaseURL != cfg.Edge.BaseURL {
			t.Errorf("%s/%s: api or edge section not carried: %+v", pc.Spec.Name, pc.Account, pc.API)
		}
		wantAuto := pc.Spec.Name != catalog.SourceDNS
		if pc.Recheck.EdgeMaxRows != 777 || pc.Recheck.Auto != wantAuto || (!wantAuto && len(pc.Recheck.Offsets) != len(pc.Settings.Recheck)) {
			t.Errorf("%s/%s: recheck %+v, settings %v", pc.Spec.Name, pc.Account, pc.Recheck, pc.Settings.Recheck)
		}
		switch {
		case pc.Spec.Edge, pc.OrgAccess:
			if pc.AccountHeader != "" {
				t.Errorf("%s/%s sends Account-Name %q", pc.Spec.Name, pc.Account, pc.AccountHeader)
			}
		case pc.AccountHeader != "acme":
			t.Errorf("%s/%s sends Account-Name %q", pc.Spec.Name, pc.Account, pc.AccountHeader)
		}
		if pc.Spec.Name == catalog.SourceDNS && (pc.Settings.Lag != lag || len(pc.Recheck.Offsets) != 1) {
			t.Errorf("dns: its own block not applied: %+v", pc.Settings)
		}
	}
}
