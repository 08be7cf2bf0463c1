package apisim

import (
	"bytes"
	"testing"
	"time"
)

// An agent_info search without timeFilter answers the account's fleet as
// of its first page, paged like any search, record for record what Fleet
// says; the fleet changes over time (status among others), and the same
// seed gives the same fleet.
func TestFleet_ASearchWithoutTimeFilterAnswersTheCurrentAgents(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *Config) { c.FleetAgents, c.FleetChange, c.PageSize = 25, time.Hour, 10 })
	tok := h.adminToken()
	acct := map[string]string{"Account-Name": "acme"}
	recs, pages := h.walk(pathOf(SourceAgentInfo), tok, acct, map[string]any{})
	if len(pages) != 3 || len(recs) != 25 || pages[0].Paging.TotalRows != 25 {
		t.Fatalf("%d pages, %d records, want 3 pages of 25 agents", len(pages), len(recs))
	}
	truth := h.sim.Fleet("acme", testNow)
	for i, r := range recs {
		if !bytes.Equal(r, truth[i].Record) {
			t.Fatalf("agent %d served %s, Fleet says %s", i, r, truth[i].Record)
		}
	}
	// A search with a timeFilter is the windowed stream, as before.
	if _, ps := h.walk(pathOf(SourceAgentInfo), tok, acct, timeFilter(testNow.Add(-time.Hour), testNow)); len(ps) > 0 && ps[0].Paging.TotalRows == 25 {
		t.Fatalf("a windowed search answered the fleet")
	}
	changed, status := 0, 0
	later := h.sim.Fleet("acme", testNow.Add(3*time.Hour))
	for i := range truth {
		if !bytes.Equal(truth[i].Record, later[i].Record) {
			changed++
			if !later[i].LastUpdate.After(testNow) {
				t.Errorf("agent %d changed but its lastUpdate %s did not move", truth[i].Mid, later[i].LastUpdate)
			}
		}
		if truth[i].Status != later[i].Status {
			status++
		}
	}
	if changed < 20 || status == 0 {
		t.Fatalf("in 3h (3 changes on average) %d of 25 agents changed, %d their status", changed, status)
	}
	h.clock.Advance(3 * time.Hour)
	again, _ := h.walk(pathOf(SourceAgentInfo), h.adminToken(), acct, map[string]any{})
	for i := range again {
		if !bytes.Equal(again[i], later[i].Record) {
			t.Fatalf("after 3h agent %d served %s, Fleet says %s", i, again[i], later[i].Record)
		}
	}
	other := start(t, func(c *Config) { c.FleetAgents, c.FleetChange = 25, time.Hour })
	if o := other.sim.Fleet("acme", testNow); !bytes.Equal(o[7].Record, truth[7].Record) {
		t.Fatalf("the same seed gave another fleet")
	}
}
