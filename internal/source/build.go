package source

import (
	"errors"
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
)

// Options tune Build: the dependencies of the clients and the pollers, and
// the bound of a batch.
type Options struct {
	// Client holds those of the API clients: HTTP client, clock, logger
	// (the pollers log there too), API metrics and the interval of
	// rate-limited warnings. See api.Options for the defaults.
	Client api.Options
	// Metrics are the pollers' metrics; nil records none.
	Metrics *Metrics
	// MaxBatchRecords is PollerConfig.MaxBatchRecords of every poller: the
	// most records one cursor.Page may carry and one reservation may ask for.
	// The app sets it to pipeline.buffer_records, so that memory stays
	// bounded by configuration whatever the server sends. 0 bounds nothing.
	MaxBatchRecords int
	// RecheckMetrics are the collector_recheck_* series; nil records
	// none. Rechecks run whatever it is (see PollerConfig.Recheck).
	RecheckMetrics *recheck.Metrics
	// RecheckCounts are every poller's PollerConfig.RecheckCounts: the
	// app hands the checkpoint (checkpoint.DB); nil narrows no grown
	// window below its bounds.
	RecheckCounts recheck.Counts
}

// Set is what a configuration builds: the clients and one poller per
// (account, source) stream.
type Set struct {
	// Core is the core API client; nil when no core source is enabled.
	Core *api.Client
	// Edge is the edge API client; nil when edge.base_url is empty (C6).
	Edge *api.Client
	// Pollers are the streams, core first, in the order of Streams.
	Pollers []*Poller

	cfg    catalog.Config // what the set was built of (Update compares)
	budget api.Budget     // the process-wide budget every client spends
	// limiters are the recheck limiters by limiterKey: one per
	// functionality, shared by its streams and kept across reloads
	// (Update), so that the streams a reload adds count with those
	// running (C4).
	limiters map[string]*recheck.Limiter
}

// Build validates cfg and builds its clients and one poller per stream of
// Streams(cfg). b is the process-wide budget (nil makes one, a
// budget.Budget); once makes every poller stop when it caught up.
func Build(cfg catalog.Config, b api.Budget, o Options, once bool) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.MaxBatchRecords < 0 {
		return nil, fmt.Errorf("sources: negative MaxBatchRecords %d", o.MaxBatchRecords)
	}
	if b == nil {
		b = budget.New(o.Client.Clock, o.Client.Metrics)
	}
	set := &Set{cfg: cfg, budget: b}
	if err := set.build(cfg, o, once, Resolve(cfg), nil); err != nil {
		return nil, err
	}
	return set, nil
}

// build adds to set a poller for each stream of pcs (Resolve's, in its
// order), or keeps the one of kept when it holds the stream. The new
// pollers share the limiter of their functionality: set's (a reload
// keeps the running ones, Update), else a new one. Once every poller is
// built, each limiter is told who shares it (share).
func (set *Set) build(cfg catalog.Config, o Options, once bool, pcs []PollerConfig, kept map[record.Stream]*Poller) error {
	var errs []error
	limiters := recheckLimiters(pcs, o, set.limiters)
	// One pool of learnt delays per source: a source's delays are mostly
	// the platform's (issue 31). Pollers kept across a reload keep
	// theirs, and new streams of their source join it.
	pools := map[string]*recheck.Pool{}
	for _, p := range kept {
		if p != nil && p.cfg.RecheckPool != nil {
			pools[p.cfg.Spec.Name] = p.cfg.RecheckPool
		}
	}
	for _, pc := range pcs {
		if p := kept[pc.stream()]; p != nil {
			set.Pollers = append(set.Pollers, p)
			continue
		}
		c, err := set.client(cfg, set.budget, o, pc.Spec.Edge)
		if err != nil {
			return err
		}
		// What the configuration says of the stream is in pc (Resolve);
		// what is added here is the process's: the run mode, logger,
		// metrics, batch bound and the shared recheck limiter.
		pc.Once = once
		pc.Logger, pc.Metrics, pc.MaxBatchRecords = o.Client.Logger, o.Metrics, o.MaxBatchRecords
		pc.RecheckLimiter, pc.RecheckMetrics = limiters[limiterKey(pc.Spec)], o.RecheckMetrics
		pc.RecheckCounts = o.RecheckCounts
		if pools[pc.Spec.Name] == nil {
			pools[pc.Spec.Name] = &recheck.Pool{}
		}
		pc.RecheckPool = pools[pc.Spec.Name]
		p, err := NewPoller(c, pc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		set.Pollers = append(set.Pollers, p)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(set.Pollers) == 0 {
		return fmt.Errorf("sources: no source enabled")
	}
	set.limiters = limiters
	set.share()
	for _, p := range set.Pollers {
		if kept[p.Stream()] == nil {
			// Every stream of a bucket is counted now: the cadence the
			// snapshots show before Run counts them all. Kept pollers
			// follow at their next step (Run paces before each).
			p.pace()
		}
	}
	return nil
}

// share tells every limiter of set who shares its bucket: the streams of
// set.Pollers of its functionality, the requests a poll of theirs makes
// (catalog.Spec.PollRequests) and the share of the bucket their rechecks
// keep (recheckShare). The streams of a functionality share its bucket:
// each sweeps as often as its part of the recheck cap affords (recheck:
// auto) and polls as often as its part of the rest (interval: auto,
// Poller's cadence). A limiter no stream shares any more (a reload
// dropped its functionality) counts none.
func (set *Set) share() {
	type count struct {
		streams, requests int
		pcs               []PollerConfig
	}
	counts := map[string]*count{}
	for _, p := range set.Pollers {
		k := limiterKey(p.cfg.Spec)
		c := counts[k]
		if c == nil {
			c = &count{}
			counts[k] = c
		}
		c.streams++
		c.requests += p.cfg.pollRequests()
		c.pcs = append(c.pcs, p.cfg)
	}
	for k, l := range set.limiters {
		c := counts[k]
		if c == nil {
			l.Share(0, 0, 0)
			continue
		}
		l.Share(c.streams, c.requests, recheckShare(c.pcs))
	}
}

// pollRequests is how many requests a poll of the stream makes (C4,
// catalog.Spec.PollRequests).
func (pc PollerConfig) pollRequests() int {
	return pc.Spec.PollRequests(pc.Settings, pc.Edge)
}

// client returns the set's core or edge client, making it on first use.
func (set *Set) client(cfg catalog.Config, b api.Budget, o Options, edge bool) (*api.Client, error) {
	var err error
	switch {
	case edge && set.Edge == nil:
		set.Edge, err = api.NewEdgeClient(cfg.Edge.Connection(), cfg.API, b, o.Client)
	case !edge && set.Core == nil:
		set.Core, err = api.NewClient(cfg.API, b, o.Client)
	}
	if edge {
		return set.Edge, err
	}
	return set.Core, err
}

// Streams returns the streams cfg configures, in the order Build makes
// their pollers: each configured account is a stream of every enabled
// source; no account means the token's own account, envelope account
// "default"; org_audit_logs adds audit_logs of account "org" (C2); each
// edge source, while edge.base_url is set, is one stream of account
// edge.account (C6: no account selection; its records carry their own
// account in the envelope, see PollerConfig.Account). It needs no credentials and builds no client: the
// state command, the check command and the sinks' stream lists use it.
func Streams(cfg catalog.Config) []record.Stream {
	pcs := Resolve(cfg)
	out := make([]record.Stream, len(pcs))
	for i, pc := range pcs {
		out[i] = pc.stream()
	}
	return out
}

// Resolve is where the configuration becomes streams: it returns, for
// every stream of cfg in the order of Streams, everything the
// configuration says of that stream and nothing else: its spec, account
// and Account-Name header (org access for the "org" stream, C2), the
// source's settings (sources.<name> over the defaults), the API and edge
// sections, and the recheck configuration. Build adds only what the
// process provides (clients, logger, metrics, run mode, limiters); a
// reader asking "what does stream X get from the configuration" reads
// this function. It does not validate cfg (Build does, catalog.Config.
// Validate).
func Resolve(cfg catalog.Config) []PollerConfig {
	var out []PollerConfig
	add := func(spec catalog.Spec, pc PollerConfig) {
		pc.Tenant, pc.Spec, pc.API, pc.Edge = cfg.Tenant, spec, cfg.API, cfg.Edge
		pc.Settings = cfg.Sources.Resolve(spec.Name)
		pc.Recheck = pc.Settings.RecheckConfig(cfg.Edge.MaxRows)
		out = append(out, pc)
	}
	for _, spec := range catalog.Specs() {
		if spec.Edge || !cfg.Sources.Resolve(spec.Name).Enabled {
			continue
		}
		for _, a := range streamAccounts(cfg.Accounts) {
			add(spec, PollerConfig{Account: a.name, AccountHeader: a.header})
		}
		if spec.OrgLevel && cfg.OrgAuditLogs {
			add(spec, PollerConfig{Account: OrgAccountName, OrgAccess: true})
		}
	}
	if cfg.Edge.BaseURL == "" {
		return out
	}
	// C6: the edge API has no account selection; the edge token alone
	// decides what it returns. One stream per edge source and token, under
	// edge.account, and no Account-Name.
	for _, spec := range catalog.Specs() {
		if !spec.Edge || !cfg.Sources.Resolve(spec.Name).Enabled {
			continue
		}
		add(spec, PollerConfig{Account: edgeAccount(cfg.Edge)})
	}
	return out
}

// edgeAccount is the account of the edge streams: edge.account, or its
// default when empty.
func edgeAccount(e catalog.EdgeConfig) string {
	if e.Account == "" {
		return catalog.DefaultEdgeAccount
	}
	return e.Account
}

// OrgAccountName is the envelope account of organization-level data (C7).
const OrgAccountName = record.OrgAccount

type streamAccount struct{ name, header string }

func streamAccounts(accounts []string) []streamAccount {
	if len(accounts) == 0 {
		return []streamAccount{{name: DefaultAccount}}
	}
	out := make([]streamAccount, len(accounts))
	for i, a := range accounts {
		out[i] = streamAccount{name: a, header: a}
	}
	return out
}

// limiterKey names the budget a stream's rechecks share: its
// functionality, of the core or the edge API (C4).
func limiterKey(spec catalog.Spec) string {
	if spec.Edge {
		return "edge/" + spec.Functionality
	}
	return "core/" + spec.Functionality
}

// recheckLimiters returns one recheck.Limiter per functionality of pcs
// (from Resolve) and of was: was's own where it has one (a reload: the
// rechecks' spends of the last period keep counting, C4), else a new one
// of the functionality's rate (api.rate, edge.rate; a reload cannot
// change them). Who shares each is said once the pollers are built
// (Set.share).
func recheckLimiters(pcs []PollerConfig, o Options, was map[string]*recheck.Limiter) map[string]*recheck.Limiter {
	now := time.Now
	if o.Client.Clock != nil {
		now = o.Client.Clock.Now
	}
	out := make(map[string]*recheck.Limiter, len(was))
	for k, l := range was {
		out[k] = l
	}
	for _, pc := range pcs {
		k := limiterKey(pc.Spec)
		if out[k] != nil {
			continue
		}
		rate := pc.API.Rate
		if pc.Spec.Edge {
			rate = pc.Edge.Rate
		}
		out[k] = recheck.NewLimiter(0, rate.Limit, rate.Period, now)
	}
	return out
}

// recheckShare is the share of their bucket that the rechecks of pcs, the
// streams of one functionality, keep: the smallest recheck_share of those
// that recheck, 0 (no rechecks) when none does.
func recheckShare(pcs []PollerConfig) float64 {
	share := 0.0
	for _, pc := range pcs {
		st := pc.Settings
		if len(st.Recheck) == 0 {
			continue
		}
		if share == 0 || st.RecheckShare < share {
			share = st.RecheckShare
		}
	}
	return share
}
