package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/api/budget"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/verify"
	"github.com/svcexport/collector/internal/window"
)

// verifyMaxAttempts bounds the attempts of one verify request when
// api.retry.max_attempts is unlimited: verify reports, it does not wait out
// an outage for ever. 429s wait for the bucket's reset (C4) like the
// daemon's.
const verifyMaxAttempts = 8

// apiCounter asks the API for the count of one window (verify.OnceCounter):
// a core window's first page, whose totalRows is the size of the result
// set (C3); an edge window's rows (C6, no totalRows). Both clients spend
// one budget, synced from every answer's RateLimit headers (C4).
type apiCounter struct {
	cfg        catalog.Config
	core, edge *api.Client
	n          atomic.Int64
}

var _ verify.OnceCounter = (*apiCounter)(nil)

// newAPICounter makes the clients of cfg (the edge one when edge.base_url
// is set).
func newAPICounter(cfg catalog.Config, log *slog.Logger) (*apiCounter, error) {
	b := budget.New(nil, nil)
	opts := api.Options{Logger: log}
	ac := cfg.API
	if ac.Retry.MaxAttempts == 0 {
		ac.Retry.MaxAttempts = verifyMaxAttempts
	}
	c := &apiCounter{cfg: cfg}
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

// requests is how many windows were asked.
func (c *apiCounter) requests() int { return int(c.n.Load()) }

// CountOnce implements verify.OnceCounter.
func (c *apiCounter) CountOnce(ctx context.Context, k record.Stream, start, end time.Time) (int64, bool, error) {
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
		What:     fmt.Sprintf("verify: count %s [%s, %s)", k, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)),
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

// deliveredOf is the counter of what sink sc delivered, and what closes
// it. The Kafka sink names a topic after the stream (an edge stream: its
// edge.account, C6), so the plan's streams name every topic to read.
func deliveredOf(sc config.SinkConfig, p verify.Plan, o Options) (verify.Delivered, func(), error) {
	switch sc.Type {
	case config.SinkFile:
		return verify.FileSink{Dir: sc.File.Dir}, func() {}, nil
	case config.SinkClickHouse:
		conn, names, err := clickhouse.OpenReader(sc.ClickHouse)
		if err != nil {
			return nil, nil, sc.KeyedError(err)
		}
		return verify.ClickHouse{Conn: conn, Names: names, Timeout: sc.ClickHouse.QueryTimeout}, func() { _ = conn.Close() }, nil
	case config.SinkKafka:
		opts, topics, err := kafka.ReaderOpts(sc.Kafka, streamsOf(p), o.Log)
		if err != nil {
			return nil, nil, sc.KeyedError(err)
		}
		return verify.Kafka{Opts: opts, Topics: topics}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("sink %s: verify cannot count in a %s sink", sc.SinkName(), sc.Type)
}
