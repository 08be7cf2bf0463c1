package source

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

// An inventory walk reads a source whose records are entity states
// (agent_info: one record per agent) as an inventory. Its windows are
// searched by createdTime (C3), so an agent that goes INACTIVE, changes
// its tags or reports a new lastUpdate is never fetched again by them.
// Every inventory_interval, once the stream caught up, the walk asks the
// source's search without timeFilter (catalog.Spec.InventoryPage: the
// current agents, paged, C3) and delivers each agent whose state is not
// in the last snapshot (inventory: changed), or every agent (inventory:
// all), as envelopes marked Snapshot whose time is the walk's start.
//
// What the last snapshot held travels in the cursor (cursor.Inventory:
// one 64-bit digest per agent state, 8 bytes an agent), so the checkpoint
// keeps it with the stream's state and it holds exactly when the page
// carrying it is delivered:
//
//	page k of the walk: After = cursor with Inventory{Taken: last walk,
//	                    States: last snapshot + the states delivered so far}
//	last page:          After = cursor with Inventory{Taken: this walk,
//	                    States: every state this walk saw}
//
// A crash before the last page is committed leaves the walk due: it is
// walked again and leaves out what its committed pages delivered. The
// last page's States are only what the walk saw, so agents gone from the
// list are forgotten (and delivered again, as new, should they return).
//
// The walk's requests rank as rechecks in the budget (budget.Priority):
// after fresh windows of every stream, before backfill. It costs
// ceil(agents / page_rows) requests a walk.

// inventoryDue reports whether the stream's inventory walk is due at now.
func (r *run) inventoryDue(now time.Time) bool {
	s := r.p.cfg.Settings
	if !r.p.cfg.Spec.Inventory || !s.ReadsInventory() || r.p.cfg.Once {
		return false
	}
	return r.inv.Taken.IsZero() || !now.Before(r.inv.Taken.Add(s.InventoryInterval))
}

// inventoryWait is how long from now the next walk is due; 0 when the
// stream reads no inventory (it then waits its interval only).
func (r *run) inventoryWait(now time.Time) time.Duration {
	s := r.p.cfg.Settings
	if !r.p.cfg.Spec.Inventory || !s.ReadsInventory() || r.p.cfg.Once || r.inv.Taken.IsZero() {
		return 0
	}
	return max(r.inv.Taken.Add(s.InventoryInterval).Sub(now), 0)
}

// inventory walks the current entities when the walk is due and emits
// those to deliver (see above); it does nothing when not due.
func (r *run) inventory(ctx context.Context) error {
	p := r.p
	asOf := p.clk.Now()
	if !r.inventoryDue(asOf) {
		return nil
	}
	spec, set := p.cfg.Spec, p.cfg.Settings
	u, body, err := spec.InventoryPage(set)
	if err != nil {
		return &api.PermanentError{Err: err}
	}
	all := set.Inventory == catalog.InventoryAll
	// The snapshot's window: the period since the walk before, or one
	// interval when there was none; every record's time is asOf.
	w := window.Window{Start: asOf.Add(-set.InventoryInterval), End: asOf}
	if t := r.inv.Taken; !t.IsZero() && t.Before(asOf) {
		w.Start = t
	}
	var seen, sent []int64
	sentSet := map[int64]struct{}{}
	next, rows := "", 0
	for idx := 0; ; idx++ {
		if idx >= p.cfg.API.MaxPages {
			return fmt.Errorf("inventory of %s/%s: more than api.max_pages (%d) pages", spec.Name, p.cfg.Account, p.cfg.API.MaxPages)
		}
		req := api.Request{
			Method: "GET", URL: next, Account: p.cfg.AccountHeader, OrgAccess: p.cfg.OrgAccess,
			Functionality: spec.Functionality, NextPage: next != "",
			Priority: budget.Priority{Account: p.cfg.Account, WindowEnd: asOf, Recheck: true},
			What:     fmt.Sprintf("inventory page %d of %s/%s", idx+1, spec.Name, p.cfg.Account),
		}
		if next == "" {
			req.Method, req.URL, req.Body = spec.Method, u, body
		}
		req.Admitted = func(ctx context.Context) error { return r.out.Reserve(ctx, p.reservation()) }
		var pb pagescan.Body
		req.Decode = classifyInto(&pb, spec.DataKey)
		resp, err := p.c.Do(ctx, req)
		p.m.InventoryRequest(spec.Name, p.cfg.Account)
		if err != nil {
			return fmt.Errorf("inventory of %s/%s: %w", spec.Name, p.cfg.Account, err)
		}
		p.m.Fetched(spec.Name, p.cfg.Account, len(pb.Records))
		envs, err := p.eb.Build(pb.Records, w, resp.Received)
		if err != nil {
			return &api.PermanentError{Err: fmt.Errorf("inventory page %d of %s/%s: %w", idx+1, spec.Name, p.cfg.Account, err)}
		}
		keep := envs[:0]
		for _, e := range envs {
			d := cursor.StateOf(e.ID)
			seen = append(seen, d)
			if _, dup := sentSet[d]; dup || !all && r.inv.Has(d) {
				continue // the same state as last time (or this walk): not sent again
			}
			sentSet[d] = struct{}{}
			sent = append(sent, d)
			e.Time, e.Snapshot = asOf, true
			keep = append(keep, e)
		}
		rows += len(keep)
		next = pb.Next
		last := next == ""
		after := r.cur
		after.Start, after.Delays, after.Log, after.Alerts = r.start, p.rv.Delays(), nil, nil
		if last {
			slices.Sort(seen)
			after.Inventory = cursor.Inventory{Taken: asOf, States: slices.Compact(seen)}
		} else {
			after.Inventory = r.inv.With(sent)
		}
		page := cursor.Page{
			Batch: record.Batch{Tenant: p.cfg.Tenant, Source: spec.Name, Account: p.cfg.Account,
				WindowStart: w.Start, WindowEnd: w.End, Page: idx, Envelopes: keep},
			After: after, Asked: cursor.AskedInventory, FetchedAt: resp.Received,
		}
		if err := r.out.Emit(ctx, page); err != nil {
			return &emitError{err}
		}
		p.m.InventoryDelivered(spec.Name, p.cfg.Account, len(keep))
		if last {
			r.inv = after.Inventory
			p.m.InventoryAgents(spec.Name, p.cfg.Account, len(r.inv.States))
			p.log.Info("inventory walked", "agents", len(r.inv.States), "delivered", rows, "requests", idx+1,
				"mode", string(set.Inventory), "next_in", set.InventoryInterval.String())
			return nil
		}
	}
}

// inventoryMetrics are the inventory walks' series (part of Metrics).
type inventoryMetrics struct {
	requests  *prometheus.CounterVec // source, account
	delivered *prometheus.CounterVec // source, account
	agents    *prometheus.GaugeVec   // source, account
}

func newInventoryMetrics() inventoryMetrics {
	return inventoryMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_inventory_requests_total",
			Help: "Pages the inventory walks asked (first pages and next pages, each one token of the source's budget, C4); a request the client retried counts once (collector_requests_total counts every attempt).",
		}, []string{"source", "account"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_inventory_records_total",
			Help: "Snapshots the inventory walks delivered: agents whose state changed since the walk before (inventory: changed) or every agent (all).",
		}, []string{"source", "account"}),
		agents: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_inventory_entities",
			Help: "Agents (distinct states) the last complete inventory walk saw.",
		}, []string{"source", "account"}),
	}
}

func (im inventoryMetrics) init(source, account string) {
	im.requests.WithLabelValues(source, account)
	im.delivered.WithLabelValues(source, account)
	im.agents.WithLabelValues(source, account)
}

// InventoryRequest counts a request of an inventory walk.
func (m *Metrics) InventoryRequest(source, account string) {
	if m != nil {
		m.inventory.requests.WithLabelValues(source, account).Inc()
	}
}

// InventoryDelivered counts n snapshots an inventory walk delivered.
func (m *Metrics) InventoryDelivered(source, account string, n int) {
	if m != nil {
		m.inventory.delivered.WithLabelValues(source, account).Add(float64(n))
	}
}

// InventoryAgents sets how many agents the last complete walk saw.
func (m *Metrics) InventoryAgents(source, account string, n int) {
	if m != nil {
		m.inventory.agents.WithLabelValues(source, account).Set(float64(n))
	}
}
