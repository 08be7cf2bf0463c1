package access

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

// Result is what Probe found for one core stream.
type Result struct {
	// Stream is the (source, account) probed; account "org" for
	// organization-level audit logs.
	Stream record.Stream
	// Err is nil when the API answered the probe with a page (or a 204);
	// else why not, scrubbed of credentials like every error of the
	// package.
	Err error
	// Status is the HTTP status of a refusal (403, 400, ...); 0 when there
	// was none (OK, or no answer at all).
	Status int
	// Reason is the api.PermanentReason of a refusal a retry cannot cure,
	// which would block the stream at run time; "" otherwise.
	Reason string
}

// OK reports whether the stream can be read.
func (a Result) OK() bool { return a.Err == nil }

// String is "source/account: ok" or "source/account: HTTP 403 ...".
func (a Result) String() string {
	if a.Err == nil {
		return a.Stream.String() + ": ok"
	}
	return a.Stream.String() + ": " + a.Err.Error()
}

// MaxAttempts bounds the attempts of one probe request (when
// api.retry.max_attempts is unlimited or larger): a check reports, it does
// not wait out an outage.
const MaxAttempts = 2

// Probe asks, for every core stream cfg configures (every enabled core
// source of every configured account, and organization-level audit logs
// when org_audit_logs is on), the first page of a one-minute window ending
// at now - lag, and reports per stream whether the key may read it (C1,
// C2, C5): a key without access to a sub-account or to organization-level
// data gets a 403 there, which at run time would block the stream. It
// spends one request of each stream's functionality (C4) and moves no
// data; o.Clock, o.Logger and o.Metrics are used as the pollers' client
// uses them. Edge streams are not probed. An error is returned only when
// no probe could be made (an invalid configuration, no client).
func Probe(ctx context.Context, cfg catalog.Config, o api.Options) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ac := cfg.API
	if ac.Retry.MaxAttempts == 0 || ac.Retry.MaxAttempts > MaxAttempts {
		ac.Retry.MaxAttempts = MaxAttempts
	}
	c, err := api.NewClient(ac, budget.New(o.Clock, o.Metrics), o)
	if err != nil {
		return nil, fmt.Errorf("probe access: %w", err)
	}
	now := c.Clock().Now()
	var out []Result
	for _, t := range targets(cfg) {
		res := Result{Stream: record.Stream{Source: t.spec.Name, Account: t.account}}
		res.Err = probeOne(ctx, c, t, cfg.Sources.Resolve(t.spec.Name), cfg.Edge, now)
		var se *api.StatusError
		if errors.As(res.Err, &se) {
			res.Status = se.Status
		}
		res.Reason, _ = api.PermanentReason(res.Err)
		out = append(out, res)
	}
	return out, nil
}

// target is one core stream to probe: its spec, envelope account and
// headers (C2).
type target struct {
	spec          catalog.Spec
	account       string
	accountHeader string
	orgAccess     bool
}

// targets lists the core streams of cfg in the pollers' order: every
// configured account ("default" without a header when none), then "org"
// for the organization-level source when org_audit_logs is on.
func targets(cfg catalog.Config) []target {
	accounts := []target{{account: source.DefaultAccount}}
	if len(cfg.Accounts) > 0 {
		accounts = accounts[:0]
		for _, a := range cfg.Accounts {
			accounts = append(accounts, target{account: a, accountHeader: a})
		}
	}
	var out []target
	for _, spec := range catalog.Specs() {
		if spec.Edge || !cfg.Sources.Resolve(spec.Name).Enabled {
			continue
		}
		for _, a := range accounts {
			a.spec = spec
			out = append(out, a)
		}
		if spec.OrgLevel && cfg.OrgAuditLogs {
			out = append(out, target{spec: spec, account: source.OrgAccountName, orgAccess: true})
		}
	}
	return out
}

// probeOne asks the first page of a one-minute window ending at now - lag.
func probeOne(ctx context.Context, c *api.Client, t target, s catalog.SourceSettings, edge catalog.EdgeConfig, now time.Time) error {
	end := now.Add(-s.Lag).Truncate(time.Second)
	w := window.Window{Start: end.Add(-time.Minute), End: end}
	u, body, err := t.spec.FirstPage(w, s, edge)
	if err != nil {
		return err
	}
	_, err = c.Do(ctx, api.Request{
		Method: t.spec.Method, URL: u, Body: body, Account: t.accountHeader, OrgAccess: t.orgAccess,
		Functionality: t.spec.Functionality, Priority: budget.Priority{Account: t.account, WindowEnd: end, Fresh: true},
		What: fmt.Sprintf("probe access of %s/%s", t.spec.Name, t.account),
		Decode: func(status int, b []byte) error {
			_, err := pagescan.Classify(status, b, t.spec.DataKey)
			return err
		},
	})
	return err
}
