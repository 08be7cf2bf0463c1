package source

import (
	"errors"
	"fmt"

	"github.com/svcexport/collector/internal/api"
)

// Options are the injected dependencies of Build.
type Options struct {
	// Client holds those of the API clients: HTTP client, clock, logger
	// (the pollers log there too), API metrics and the interval of
	// rate-limited warnings. See api.Options for the defaults.
	Client api.Options
	// Metrics are the pollers' metrics; nil records none.
	Metrics *Metrics
}

// Set is what a configuration builds: the clients and one poller per
// (account, source) stream.
type Set struct {
	// Core is the core API client; nil when no core source is enabled.
	Core *api.Client
	// Edge is the edge API client; nil when edge.base_url is empty (C6).
	Edge *api.Client
	// Pollers are the streams, core first, in a fixed order.
	Pollers []*Poller
}

// Build validates cfg and builds its clients and pollers. budget is the
// process-wide budget (nil makes one); once makes every poller stop when it
// caught up. Accounts: each configured account is a stream of every
// enabled source; no account means the token's own account, envelope
// account "default"; org_audit_logs adds audit_logs of account "org" with
// Org-Access: true (C2). Edge sources use edge.accounts, or else the
// top-level accounts.
func Build(cfg Config, budget *api.Budget, o Options, once bool) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if budget == nil {
		budget = api.NewBudget(o.Client.Clock, o.Client.Metrics)
	}
	set := &Set{}
	var errs []error
	add := func(c *api.Client, pc PollerConfig) {
		pc.API, pc.Edge, pc.Once = cfg.API, cfg.Edge, once
		pc.Settings = cfg.Sources.Resolve(pc.Spec.Name)
		pc.Logger, pc.Metrics = o.Client.Logger, o.Metrics
		p, err := NewPoller(c, pc)
		if err != nil {
			errs = append(errs, err)
			return
		}
		set.Pollers = append(set.Pollers, p)
	}
	for _, spec := range Specs() {
		if spec.Edge || !cfg.Sources.Resolve(spec.Name).Enabled {
			continue
		}
		if set.Core == nil {
			c, err := api.NewClient(cfg.API, budget, o.Client)
			if err != nil {
				return nil, err
			}
			set.Core = c
		}
		for _, a := range streamAccounts(cfg.Accounts) {
			add(set.Core, PollerConfig{Spec: spec, Account: a.name, AccountHeader: a.header})
		}
		if spec.OrgLevel && cfg.OrgAuditLogs {
			add(set.Core, PollerConfig{Spec: spec, Account: OrgAccountName, OrgAccess: true})
		}
	}
	if cfg.Edge.BaseURL != "" {
		accounts := cfg.Edge.Accounts
		if accounts == nil {
			accounts = cfg.Accounts
		}
		for _, spec := range Specs() {
			if !spec.Edge || !cfg.Sources.Resolve(spec.Name).Enabled {
				continue
			}
			if set.Edge == nil {
				c, err := api.NewEdgeClient(cfg.Edge.Connection(), cfg.API, budget, o.Client)
				if err != nil {
					return nil, err
				}
				set.Edge = c
			}
			for _, a := range streamAccounts(accounts) {
				add(set.Edge, PollerConfig{Spec: spec, Account: a.name, AccountHeader: a.header})
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(set.Pollers) == 0 {
		return nil, fmt.Errorf("sources: no source enabled")
	}
	return set, nil
}

// OrgAccountName is the envelope account of organization-level data (C7).
const OrgAccountName = "org"

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
