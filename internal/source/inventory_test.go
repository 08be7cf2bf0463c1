package source

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
)

// inventoryEnv is an agent_info stream of account acme against a
// simulator whose fleet of 30 agents changes state every 2h on average,
// served 7 agents a page, with the inventory walked every hour.
func inventoryEnv(t *testing.T, mode catalog.InventoryMode) (*apisim.Server, *env) {
	t.Helper()
	srv, hc := startSimInMemory(t, func(c *apisim.Config) {
		c.FleetAgents, c.FleetChange, c.PageSize = 30, 2*time.Hour, 7
		c.Rates[apisim.SourceAgentInfo] = 20
	})
	cfg := simConfigInMemory()
	cfg.API.PageRows = 7
	hour, m := time.Hour, string(mode)
	cfg.Sources[catalog.SourceAgentInfo] = catalog.SourceOverride{Start: ptr("1h"), Recheck: &[]catalog.RecheckPoint{},
		Inventory: &m, InventoryInterval: &hour}
	return srv, newEnvOn(t, cfg, hc)
}

// runFor runs p as a daemon from cur for d of the bubble's time and
// returns what it emitted.
func runFor(t *testing.T, p *Poller, cur cursor.Cursor, d time.Duration) *collector {
	t.Helper()
	col := &collector{}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { err = p.Run(ctx, cur, EmitFunc(col.emit)) })
	time.Sleep(d)
	cancel()
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	return col
}

// walk is the snapshot envelopes of one inventory walk.
type walk struct {
	asOf time.Time
	envs []record.Envelope
}

// walks groups the snapshot envelopes of pages by walk (their time), in
// order; a walk that delivered nothing has no envelope and is not seen.
func walks(pages []cursor.Page) []walk {
	var out []walk
	for _, pg := range pages {
		for _, e := range pg.Batch.Envelopes {
			if !e.Snapshot {
				continue
			}
			if len(out) == 0 || !out[len(out)-1].asOf.Equal(e.Time) {
				out = append(out, walk{asOf: e.Time})
			}
			out[len(out)-1].envs = append(out[len(out)-1].envs, e)
		}
	}
	return out
}

// fleetIDs is the C7 id of each agent of the simulator's fleet at t, by mid.
func fleetIDs(t *testing.T, srv *apisim.Server, at time.Time) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, a := range srv.Fleet("acme", at) {
		id, err := record.ID(catalog.SourceAgentInfo, a.Record)
		if err != nil {
			t.Fatal(err)
		}
		out[a.Mid] = id
	}
	return out
}

// midOf is the mid of a snapshot envelope's record.
func midOf(t *testing.T, e record.Envelope) int64 {
	t.Helper()
	var r struct{ Mid int64 }
	if err := json.Unmarshal(e.Record, &r); err != nil {
		t.Fatal(err)
	}
	return r.Mid
}

// An agent that changes status in the simulator reaches the sink within
// one inventory interval: every walk delivers exactly the agents whose
// state changed since the walk before (the first: every agent), so that
// the latest state delivered per agent (what a compacted topic keyed by
// ACCOUNT/mid or the agent_info_latest view holds) is the simulator's
// truth after every walk; the walks are an inventory_interval apart.
func TestInventory_AnAgentThatChangesStatusReachesTheSinkWithinOneInterval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, e := inventoryEnv(t, catalog.InventoryChanged)
		p := e.poller(catalog.SourceAgentInfo, "acme", false)
		col := runFor(t, p, cursor.Cursor{}, 4*time.Hour+10*time.Minute)
		ws := walks(col.snapshot())
		if len(ws) < 4 {
			t.Fatalf("%d walks delivered agents in 4h10m, want at least 4 (one an hour)", len(ws))
		}
		latest := map[int64]string{}
		changedStatus := 0
		for k, w := range ws {
			truth := fleetIDs(t, srv, w.asOf)
			var before map[int64]string
			if k > 0 {
				before = fleetIDs(t, srv, ws[k-1].asOf)
				if gap := w.asOf.Sub(ws[k-1].asOf); gap > time.Hour+5*time.Minute {
					t.Errorf("walk %d came %s after the one before, more than inventory_interval (1h) and one poll", k, gap)
				}
			}
			want := map[int64]bool{}
			for mid, id := range truth {
				if before[mid] != id {
					want[mid] = true
				}
			}
			got := map[int64]bool{}
			for _, env := range w.envs {
				mid := midOf(t, env)
				if got[mid] {
					t.Errorf("walk %d delivered agent %d twice", k, mid)
				}
				got[mid] = true
				latest[mid] = env.ID
			}
			if len(got) != len(want) {
				t.Errorf("walk %d at %s delivered %d agents, %d changed since the walk before", k, w.asOf, len(got), len(want))
			}
			for mid := range want {
				if !got[mid] {
					t.Errorf("walk %d: agent %d changed and was not delivered", k, mid)
				}
			}
			if k == 0 && len(got) != 30 {
				t.Errorf("the first walk delivered %d agents, want all 30", len(got))
			}
			// The sink's latest state of every agent is the truth.
			for mid, id := range truth {
				if latest[mid] != id {
					t.Errorf("after walk %d agent %d holds %s, the simulator says %s", k, mid, latest[mid], id)
				}
			}
			if k > 0 {
				prev := srv.Fleet("acme", ws[k-1].asOf)
				for i, a := range srv.Fleet("acme", w.asOf) {
					if a.Status != prev[i].Status {
						changedStatus++
						if !got[a.Mid] {
							t.Errorf("agent %d went %s at %s and walk %d did not deliver it", a.Mid, a.Status, a.LastUpdate, k)
						}
					}
				}
			}
		}
		if changedStatus == 0 {
			t.Fatal("no agent changed status between walks: the test proved nothing")
		}
	})
}

// The last snapshot travels in the cursor of every page after the walk,
// fresh windows included, so that a poller started again from the last
// page's cursor (what the checkpoint holds) delivers only the agents that
// changed since the walk before the restart, not the whole fleet again.
func TestInventory_ARestartFromTheCursorDeliversOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv, e := inventoryEnv(t, catalog.InventoryChanged)
		first := runFor(t, e.poller(catalog.SourceAgentInfo, "acme", false), cursor.Cursor{}, 90*time.Minute)
		pages := first.snapshot()
		ws := walks(pages)
		if len(ws) == 0 {
			t.Fatal("no walk in the first run")
		}
		lastWalk := ws[len(ws)-1].asOf
		fresh := 0
		for _, pg := range pages {
			if len(pg.Batch.Envelopes) > 0 && pg.Batch.Envelopes[0].Snapshot || pg.Batch.WindowEnd.Before(lastWalk) {
				continue
			}
			fresh++
			if !pg.After.Inventory.Taken.Equal(lastWalk) || len(pg.After.Inventory.States) != 30 {
				t.Errorf("a page of window %s..%s after the walk carries inventory %v with %d states, want the walk of %s with 30",
					pg.Batch.WindowStart, pg.Batch.WindowEnd, pg.After.Inventory.Taken, len(pg.After.Inventory.States), lastWalk)
			}
		}
		if fresh == 0 {
			t.Fatal("no window page after the walk: the test did not look at one")
		}
		again := runFor(t, e.poller(catalog.SourceAgentInfo, "acme", false), first.last(), 90*time.Minute)
		ws2 := walks(again.snapshot())
		if len(ws2) == 0 {
			t.Fatal("no walk after the restart")
		}
		before, now := fleetIDs(t, srv, lastWalk), fleetIDs(t, srv, ws2[0].asOf)
		changed := 0
		for mid, id := range now {
			if before[mid] != id {
				changed++
			}
		}
		if changed == 30 {
			t.Fatal("every agent changed: the test cannot tell a restart that forgot the snapshot")
		}
		if got := len(ws2[0].envs); got != changed {
			t.Fatalf("the first walk after the restart delivered %d agents, %d changed since the walk before it", got, changed)
		}
	})
}

// inventory: all delivers every agent at every walk; inventory: off none.
func TestInventory_AllDeliversEveryAgentEveryWalkAndOffNone(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, e := inventoryEnv(t, catalog.InventoryAll)
		ws := walks(runFor(t, e.poller(catalog.SourceAgentInfo, "acme", false), cursor.Cursor{}, 2*time.Hour+10*time.Minute).snapshot())
		if len(ws) != 3 {
			t.Fatalf("%d walks in 2h10m, want 3", len(ws))
		}
		for k, w := range ws {
			if len(w.envs) != 30 {
				t.Errorf("walk %d delivered %d agents, want all 30", k, len(w.envs))
			}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		_, e := inventoryEnv(t, catalog.InventoryOff)
		col := runFor(t, e.poller(catalog.SourceAgentInfo, "acme", false), cursor.Cursor{}, 2*time.Hour)
		if ws := walks(col.snapshot()); len(ws) != 0 {
			t.Fatalf("inventory: off delivered %d walks", len(ws))
		}
		if len(col.snapshot()) == 0 {
			t.Fatal("no page at all: the stream did not run")
		}
	})
}

// What an inventory costs: one request per page of agents per walk, one
// walk per inventory_interval, counted in
// collector_inventory_requests_total. For 1,000 agents at 100 a page and
// a walk an hour: 10 requests an hour (at the API's 5,000 a page: 1), of
// agent_info's 480.
func TestInventory_CostsOneRequestPerPageOfAgentsPerWalk(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		_, hc := startSimInMemory(t, func(c *apisim.Config) {
			c.FleetAgents, c.PageSize = 1000, 100
			c.Rates[apisim.SourceAgentInfo] = 20
		})
		cfg := simConfigInMemory()
		cfg.API.PageRows = 100
		cfg.Sources[catalog.SourceAgentInfo] = catalog.SourceOverride{Start: ptr("1h"), Recheck: &[]catalog.RecheckPoint{}}
		e := newEnvOn(t, cfg, hc)
		col := runFor(t, e.poller(catalog.SourceAgentInfo, "acme", false), cursor.Cursor{}, 3*time.Hour+10*time.Minute)
		ws := walks(col.snapshot())
		if len(ws) != 4 {
			t.Fatalf("%d walks delivered agents in 3h10m, want 4 (at 0, 1h, 2h and 3h)", len(ws))
		}
		req := gathered(t, e.reg, "collector_inventory_requests_total", "source", "agent_info", "account", "acme")
		if req != 40 {
			t.Fatalf("4 walks of 1,000 agents at 100 a page cost %v requests, want 40", req)
		}
		if n := gathered(t, e.reg, "collector_inventory_entities", "source", "agent_info", "account", "acme"); n != 1000 {
			t.Fatalf("collector_inventory_entities = %v, want 1000", n)
		}
		delivered := 0
		for _, w := range ws {
			delivered += len(w.envs)
		}
		if got := gathered(t, e.reg, "collector_inventory_records_total", "source", "agent_info", "account", "acme"); int(got) != delivered {
			t.Fatalf("collector_inventory_records_total = %v, %d delivered", got, delivered)
		}
		t.Logf("inventory of 1,000 agents, 100 a page, every 1h: %v requests in %d walks (%.0f an hour); %d snapshots delivered, %d of them at the first walk",
			req, len(ws), req/float64(len(ws)), delivered, len(ws[0].envs))
	})
}
