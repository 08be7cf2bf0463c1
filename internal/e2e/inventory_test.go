package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// Agents as an inventory, end to end: the collector binary, as a daemon,
// walks agent_info's current agents every inventory_interval (1m here)
// while the simulator's fleet changes an agent's state every minute on
// average. After every walk the latest state the file sink holds of each
// agent (what a compacted topic keyed by ACCOUNT/mid and the
// agent_info_latest view hold) is the simulator's, agents that changed
// status among them: a change reaches the sink within one interval.
func TestInventory_AnAgentThatChangesStatusReachesTheSinkWithinOneInterval(t *testing.T) {
	t.Parallel()
	const agents = 40
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) { c.FleetAgents, c.FleetChange = agents, time.Minute })
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().UTC().Add(-time.Hour).Truncate(time.Minute),
		Sources: []string{"agent_info"}, Accounts: []string{"acme"}, Inventory: "changed", InventoryInterval: time.Minute})
	p := c.Start(t)
	defer p.Kill()

	// Wait for three walks: the first (every agent) and two of changes.
	var walks []invWalk
	deadline := time.Now().Add(5 * time.Minute)
	for len(walks) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d walks in 5 minutes, want 3 (one a minute)\n%s", len(walks), p.Tail(30))
		}
		select {
		case <-p.Exited():
			t.Fatalf("the collector exited: %v\n%s", p.Err(), p.Tail(30))
		case <-time.After(2 * time.Second):
		}
		walks = readWalks(t, c.OutDir())
	}
	if err := p.Stop(time.Minute); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Tail(30))
	}
	walks = readWalks(t, c.OutDir())

	// The simulator's state of every agent when the walk asked: the walk
	// began at its time and its page arrived at fetched_at; an agent
	// changing in between may show either state.
	truthAt := func(at time.Time) map[int64]apisim.FleetAgent {
		out := map[int64]apisim.FleetAgent{}
		for _, a := range sim.Fleet("acme", at) {
			out[a.Mid] = a
		}
		return out
	}
	idOf := func(a apisim.FleetAgent) string {
		id, err := record.ID("agent_info", a.Record)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	latest := map[int64]string{}
	statusChanges := 0
	for k, w := range walks {
		lo, hi := truthAt(w.asOf), truthAt(w.fetched)
		for mid, id := range w.ids {
			latest[mid] = id
		}
		if k == 0 && len(w.ids) != agents {
			t.Errorf("the first walk delivered %d agents, want all %d", len(w.ids), agents)
		}
		for mid, a := range lo {
			if got := latest[mid]; got != idOf(a) && got != idOf(hi[mid]) {
				t.Errorf("after the walk of %s the sink holds agent %d as %s, the simulator as %s", w.asOf, mid, got, idOf(a))
			}
		}
		if k == 0 {
			continue
		}
		// No walk is skipped: the next one comes after an interval and a
		// poll, which a busy machine may stretch by seconds, never by a
		// whole interval.
		if gap := w.asOf.Sub(walks[k-1].asOf); gap >= 2*time.Minute {
			t.Errorf("walk %d came %s after the one before: a walk of inventory_interval (1m) was skipped", k, gap)
		}
		before := truthAt(walks[k-1].asOf)
		for mid, a := range lo {
			if a.Status != before[mid].Status && a.Status == hi[mid].Status {
				statusChanges++
				if w.ids[mid] == "" {
					t.Errorf("agent %d went %s between walks %d and %d and walk %d did not deliver it", mid, a.Status, k-1, k, k)
				}
			}
			if idOf(a) == idOf(before[mid]) && idOf(a) == idOf(hi[mid]) && w.ids[mid] != "" {
				t.Errorf("walk %d delivered agent %d, unchanged since the walk before", k, mid)
			}
		}
	}
	if statusChanges == 0 {
		t.Fatal("no agent changed status between walks: the test proved nothing")
	}
	t.Logf("%d walks; %d status changes delivered by the next walk; snapshots per walk: %v", len(walks), statusChanges, walkSizes(walks))
}

// invWalk is what one inventory walk delivered: its time (when it began),
// when its page arrived, and the id of each agent's snapshot by mid.
type invWalk struct {
	asOf, fetched time.Time
	ids           map[int64]string
}

// readWalks reads the snapshots under dir, one invWalk per walk time, in
// order of time.
func readWalks(t *testing.T, dir string) []invWalk {
	t.Helper()
	byTime := map[time.Time]*invWalk{}
	harness.EachEnvelope(t, dir, func(e *harness.Envelope, _ []byte) {
		if !e.Snapshot {
			return
		}
		var r struct{ Mid int64 }
		if err := json.Unmarshal(e.Record, &r); err != nil {
			t.Fatal(err)
		}
		w := byTime[e.Time]
		if w == nil {
			w = &invWalk{asOf: e.Time, fetched: e.FetchedAt, ids: map[int64]string{}}
			byTime[e.Time] = w
		}
		if _, twice := w.ids[r.Mid]; twice {
			t.Errorf("the walk of %s delivered agent %d twice", e.Time, r.Mid)
		}
		w.ids[r.Mid] = e.ID
		if e.FetchedAt.After(w.fetched) {
			w.fetched = e.FetchedAt
		}
	})
	var out []invWalk
	for _, w := range byTime {
		out = append(out, *w)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].asOf.Before(out[j-1].asOf); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func walkSizes(ws []invWalk) []int {
	out := make([]int, len(ws))
	for i, w := range ws {
		out[i] = len(w.ids)
	}
	return out
}
