package revisit

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/alerttrack"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/source/pollmetrics"
	"github.com/svcexport/collector/internal/window"
)

// AlertMark is what an edge alert stream remembers of one alert across
// restarts (C6): the greatest update_time emitted and its create_time. It
// has the fields of checkpoint.AlertMark, which the pipeline stores.
type AlertMark struct {
	Update, Create time.Time
}

// LogChanges are the changes to a stream's window log (package recheck)
// and alert marks that hold once the page carrying them, and every earlier
// page of the stream, is delivered: the pipeline commits them in the same
// transaction as the cursor (checkpoint.Changes), so that the log never
// says a window was fetched, or an alert emitted, before it was.
type LogChanges struct {
	// Delete removes the log entries with these starts; Put then inserts
	// or replaces entries; PruneBefore, when not zero, removes the
	// entries ending at or before it.
	Delete      []time.Time
	Put         []recheck.Window
	PruneBefore time.Time
	// Alerts sets the marks of these alert uuids; AlertsPruneBefore,
	// when not zero, forgets the alerts created before it.
	Alerts            map[string]AlertMark
	AlertsPruneBefore time.Time
}

// Empty reports whether c changes nothing.
func (c *LogChanges) Empty() bool {
	return c == nil || len(c.Delete) == 0 && len(c.Put) == 0 && c.PruneBefore.IsZero() && len(c.Alerts) == 0 && c.AlertsPruneBefore.IsZero()
}

// Asker is what a Runner asks and delivers through: the poller's run of
// the stream. Its methods are called from the run's goroutine only.
type Asker interface {
	// Fetch fetches page idx of w: the first page when next is empty,
	// else the next-page URL next. recheck ranks the request as a recheck
	// (after fresh windows, before backfill).
	Fetch(ctx context.Context, w window.Window, next string, idx int, recheck bool) (pagescan.Body, time.Time, error)
	// Emit hands records of page idx of w, received then, to the pipeline
	// as Revisit pages that leave the cursor as it stands; the last
	// carries lc. An error of Emit ends the run.
	Emit(ctx context.Context, w window.Window, idx int, records []json.RawMessage, received time.Time, lc *LogChanges) error
	// Envelopes returns the envelopes of records fetched in w.
	Envelopes(records []json.RawMessage, w window.Window, received time.Time) ([]record.Envelope, error)
	// SplitTooLarge answers an answer for w over api.max_body_bytes (err):
	// it splits w and asks each part with ask, or fails when w cannot be
	// split further.
	SplitTooLarge(ctx context.Context, w window.Window, err error, ask func(context.Context, window.Window) error) error
}

// Config is what a Runner needs of its poller's configuration.
type Config struct {
	// Stream is the poller's stream; Spec its source.
	Stream record.Stream
	Spec   catalog.Spec
	// Settings, API and Edge are the poller's (interval, max_window;
	// max_pages; max_rows, the alert lookback and follow).
	Settings catalog.SourceSettings
	API      api.Config
	Edge     catalog.EdgeConfig
	// Plan is the poller's configured planner (history floor, splits).
	Plan window.Planner
	// Recheck, Limiter and RecheckMetrics are PollerConfig's: no
	// rechecks and no window log when Limiter is nil or Recheck is off.
	Recheck        recheck.Config
	Limiter        *recheck.Limiter
	RecheckMetrics *recheck.Metrics
	// Metrics, Logger and Clock are the poller's.
	Metrics *pollmetrics.Metrics
	Logger  *slog.Logger
	Clock   api.Clock
}

// Runner is one poller's rechecks and alert re-asks, and what they keep:
// its copy of the window log and its alert tracker. Its methods but
// Pending are called from the poller's Run goroutine only.
type Runner struct {
	cfg    Config
	log    *slog.Logger
	m      *pollmetrics.Metrics
	alerts *alerttrack.Tracker
	// wlog is the window log as emitted; marksLoaded is set once the
	// alert marks of the checkpoint seeded the tracker; followed is when
	// alerts past the lookback were last followed.
	wlog        wlog
	marksLoaded bool
	followed    time.Time
	// knownOnly is set while alerts past the lookback are followed:
	// only alerts with a mark are emitted.
	knownOnly bool
	pending   atomic.Int64
}

// New returns the Runner of a poller; it tracks alerts when the source is
// edge alerts with an alert update lookback.
func New(cfg Config) *Runner {
	r := &Runner{cfg: cfg, log: cfg.Logger, m: cfg.Metrics}
	if cfg.Spec.Name == catalog.SourceEdgeAlerts && cfg.Edge.AlertUpdateLookback > 0 {
		r.alerts = alerttrack.New(cfg.Edge.AlertUpdateLookback)
	}
	return r
}

// Pending is how many logged windows had a recheck due when last counted
// (Snapshot.RecheckPending). It is safe for concurrent use.
func (r *Runner) Pending() int { return int(r.pending.Load()) }

// StartAt tells a tracker of alerts that its stream is new and starts at
// st: it has seen nothing before, so re-asks begin there too. A resumed
// stream re-asks its whole lookback, as it may have missed updates while
// down.
func (r *Runner) StartAt(st time.Time) {
	if r.alerts != nil {
		r.alerts.From = st
	}
}

// Load takes the window log and alert marks of the cursor Run starts
// from, once.
func (r *Runner) Load(log []recheck.Window, marks map[string]AlertMark) {
	if r.wlog == nil {
		r.wlog = wlog{}
		for _, w := range log {
			r.wlog[w.Start] = w
		}
	}
	if r.alerts != nil && !r.marksLoaded {
		r.marksLoaded = true
		for id, m := range marks {
			r.alerts.Seed(id, alerttrack.Mark(m))
		}
	}
}
