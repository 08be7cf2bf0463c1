package apicount

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

// MaxAttempts bounds the attempts of one count request when
// api.retry.max_attempts is unlimited (0): verify reports, it does not wait
// out an outage for ever. 429s wait for the bucket's reset (C4) like the
// daemon's.
const MaxAttempts = 8

// Counter asks the API for the count of one window (verify.OnceCounter):
// a core window's first page, whose totalRows is the size of the result
// set (C3); an edge window's rows (C6, no totalRows). Both clients spend
// one budget, synced from every answer's RateLimit headers (C4). It is
// safe for concurrent use.
type Counter struct {
	cfg        catalog.Config
	core, edge *api.Client
	n          atomic.Int64
}

// New makes the clients of cfg (the edge one when edge.base_url is set)
// with opts (its Logger, HTTPClient and Clock; the budget is the
// Counter's own).
func New(cfg catalog.Config, opts api.Options) (*Counter, error) {
	b := budget.New(nil, nil)
	ac := cfg.API
	if ac.Retry.MaxAttempts == 0 {
		ac.Retry.MaxAttempts = MaxAttempts
	}
	c := &Counter{cfg: cfg}
	var err error
	if c.core, err = api.NewClient(ac, b, opts); err != nil {
		return nil, fmt.Errorf("verify: core API client: %w", err)
	}
	if cfg.Edge.BaseURL != "" {
		if c.edge, err = api.NewEdgeClient(cfg.Edge.Connection(), ac, b, opts); err != nil {
			return nil, fmt.Errorf("verify: edge API client: %w", err)
		}
	}
	return c, nil
}

// Requests is how many windows were asked so far.
func (c *Counter) Requests() int { return int(c.n.Load()) }

// CountOnce asks for the window [start, end) of k once (verify.OnceCounter):
// its count, and whether the answer may be cut (at the 500,000 cap, C3,
// or at edge.max_rows, C6), so that the caller asks again in parts.
func (c *Counter) CountOnce(ctx context.Context, k record.Stream, start, end time.Time) (int64, bool, error) {
	spec, ok := catalog.LookupSpec(k.Source)
	if !ok {
		return 0, false, fmt.Errorf("unknown source %q", k.Source)
	}
	s := c.cfg.Sources.Resolve(k.Source)
	u, body, err := spec.FirstPage(window.Window{Start: start, End: end}, s, c.cfg.Edge)
	if err != nil {
		return 0, false, err
	}
	req := api.Request{
		Method: spec.Method, URL: u, Body: body, Functionality: spec.Functionality,
		Priority: budget.Priority{Account: k.Account, WindowEnd: end},
		// report.go's error names the stream and the window; What heads
		// the API's errors and logs, saying whose request it is.
		What: "verify",
	}
	client := c.core
	switch {
	case spec.Edge:
		client = c.edge
	case k.Account == source.OrgAccountName:
		req.OrgAccess = true // C2: organization-level audit logs
	case k.Account != source.DefaultAccount:
		req.Account = k.Account
	}
	if client == nil {
		return 0, false, fmt.Errorf("%s: edge.base_url is not set", k)
	}
	var page pagescan.Body
	req.Decode = func(status int, b []byte) (err error) {
		page, err = pagescan.Classify(status, b, spec.DataKey)
		return err
	}
	c.n.Add(1)
	if _, err := client.Do(ctx, req); err != nil {
		return 0, false, err
	}
	rows := int64(len(page.Records))
	if spec.Edge {
		// C6: max_rows rows may be a cut answer.
		return rows, rows >= int64(c.cfg.Edge.MaxRows), nil
	}
	n := rows
	if page.HasPaging {
		n = max(page.TotalRows, rows)
	}
	// C3: totalRows at the cap may be the cap, not the size.
	return n, n >= catalog.ResultCap(c.cfg.API), nil
}
