package source

import (
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
)

func streamsOf(ps []*Poller) []record.Stream {
	out := make([]record.Stream, len(ps))
	for i, p := range ps {
		out[i] = p.Stream()
	}
	return out
}

// A reload (issue 33 item 1) keeps the pollers of the streams it does not
// change, and their client; builds pollers for the streams it adds or
// changes, on the same budget; and names the streams it removes.
func TestUpdate_KeepsUnchangedPollersAndBuildsTheRest(t *testing.T) {
	t.Parallel()
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = "http://127.0.0.1:1", "k", secret.New("s")
	cfg.Accounts = []string{"acme", "old"}
	off := false
	for _, name := range []string{catalog.SourceChangedFiles, catalog.SourceConnections, catalog.SourceUserLogins, catalog.SourceAgentInfo, catalog.SourceAuditLogs, catalog.SourceCloudActivities} {
		cfg.Sources[name] = catalog.SourceOverride{Enabled: &off}
	}
	set, err := Build(cfg, nil, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	before := map[record.Stream]*Poller{}
	for _, p := range set.Pollers {
		before[p.Stream()] = p
	}

	next := cfg
	next.Accounts = []string{"acme", "new"}
	next.Sources = catalog.SourcesConfig{}
	for k, v := range cfg.Sources {
		next.Sources[k] = v
	}
	on, every := true, 7*time.Minute
	next.Sources[catalog.SourceUserLogins] = catalog.SourceOverride{Enabled: &on, Interval: catalog.Every(every)}
	upd, ch, err := set.Update(next, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := streamsOf(upd.Pollers), Streams(next); !equalStreams(got, want) {
		t.Fatalf("updated set has %v, want %v", got, want)
	}
	acme := record.Stream{Source: catalog.SourceDNS, Account: "acme"}
	kept, _ := upd.poller(acme)
	if kept != before[acme] {
		t.Error("the unchanged stream dns/acme got a new poller")
	}
	if upd.Core != set.Core {
		t.Error("an unchanged api section got a new client")
	}
	if got := streamsOf(ch.Added); !equalStreams(got, []record.Stream{{Source: catalog.SourceDNS, Account: "new"},
		{Source: catalog.SourceUserLogins, Account: "acme"}, {Source: catalog.SourceUserLogins, Account: "new"}}) {
		t.Errorf("added %v", got)
	}
	if got := streamsOf(ch.Removed); len(got) != 1 || got[0] != (record.Stream{Source: catalog.SourceDNS, Account: "old"}) {
		t.Errorf("removed %v", got)
	}
	if len(ch.Changed) != 0 {
		t.Errorf("changed %v", streamsOf(ch.Changed))
	}

	// A source setting changes its streams only; an api key all of them,
	// with a new client on the same budget.
	again := next
	again.Sources = catalog.SourcesConfig{}
	for k, v := range next.Sources {
		again.Sources[k] = v
	}
	later := 9 * time.Minute
	again.Sources[catalog.SourceUserLogins] = catalog.SourceOverride{Enabled: &on, Interval: catalog.Every(later)}
	_, ch, err = upd.Update(again, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Changed) != 2 || len(ch.Added)+len(ch.Removed) != 0 || ch.Changed[0].Stream().Source != catalog.SourceUserLogins {
		t.Errorf("a logins interval changed %v, added %v, removed %v", streamsOf(ch.Changed), streamsOf(ch.Added), streamsOf(ch.Removed))
	}
	again.API.Timeout = again.API.Timeout + time.Second
	last, ch, err := upd.Update(again, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Changed) != len(upd.Pollers) || last.Core == upd.Core || last.Core.Budget() != upd.Core.Budget() {
		t.Errorf("an api change restarted %d of %d streams; new client %v, same budget %v",
			len(ch.Changed), len(upd.Pollers), last.Core != upd.Core, last.Core.Budget() == upd.Core.Budget())
	}

	// A configuration that does not validate changes nothing.
	bad := again
	bad.API.BaseURL = ""
	if _, _, err := last.Update(bad, Options{}, false); err == nil {
		t.Error("an invalid configuration was taken")
	}
}

func equalStreams(a, b []record.Stream) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
