package source

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/clock"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/recheck"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/alerttrack"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/source/pagescan"
	"github.com/svcexport/collector/internal/window"
)

// rechecksConfig is what a rechecks needs of its poller's configuration.
type rechecksConfig struct {
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
	// Counts are PollerConfig.RecheckCounts: nil narrows no grown window.
	Counts recheck.Counts
	// Pool is PollerConfig.RecheckPool: what the streams of the source
	// learn together; nil: the stream learns alone.
	Pool *recheck.Pool
	// Metrics, Logger and Clock are the poller's.
	Metrics *Metrics
	Logger  *slog.Logger
	Clock   clock.Clock
}

// rechecks is one poller's rechecks and alert re-asks, and what they keep:
// its copy of the window log and its alert tracker. Its methods but
// Pending are called from the poller's Run goroutine only.
type rechecks struct {
	cfg    rechecksConfig
	log    *slog.Logger
	m      *Metrics
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
	// delays are what the stream learnt of the platform's delays (seeded
	// from the cursor Run starts from, Load); points is the recheck plan
	// of the current step (recheck.Config.Learnt), set is whether it was
	// computed; swept is when the last sweep of recent windows began.
	delays cursor.Delays
	points recheck.Plan
	set    bool
	swept  time.Time
	// polled is when the latest fresh poll that re-covered the late
	// phase began (recheck.Plan.Polled).
	polled time.Time
	// view is what learn last published, for Snapshot (any goroutine).
	view atomic.Pointer[learntView]
}

// learntView is what a stream learnt, as Snapshot shows it.
type learntView struct {
	delays         cursor.Delays
	dense, cadence time.Duration
}

// View returns what the stream last learnt: its delays and the sweep
// they give. It is safe for concurrent use.
func (r *rechecks) View() (cursor.Delays, time.Duration, time.Duration) {
	v := r.view.Load()
	if v == nil {
		return cursor.Delays{}, 0, 0
	}
	return v.delays, v.dense, v.cadence
}

// newRechecks returns the rechecks of a poller; it tracks alerts when the source is
// edge alerts with an alert update lookback.
func newRechecks(cfg rechecksConfig) *rechecks {
	r := &rechecks{cfg: cfg, log: cfg.Logger, m: cfg.Metrics}
	if cfg.Spec.Name == catalog.SourceEdgeAlerts && cfg.Edge.AlertUpdateLookback > 0 {
		r.alerts = alerttrack.New(cfg.Edge.AlertUpdateLookback)
	}
	return r
}

// Pending is how many logged windows had a recheck due when last counted
// (Snapshot.RecheckPending). It is safe for concurrent use.
func (r *rechecks) Pending() int { return int(r.pending.Load()) }

// StartAt tells a tracker of alerts that its stream is new and starts at
// st: it has seen nothing before, so re-asks begin there too. A resumed
// stream re-asks its whole lookback, as it may have missed updates while
// down.
func (r *rechecks) StartAt(st time.Time) {
	if r.alerts != nil {
		r.alerts.From = st
	}
}

// Load takes the window log, alert marks and learnt delays of the cursor
// Run starts from, once. The entries keep the due times they stored, and
// those stored by a version that kept none get one from the plan the
// loaded delays give (recheck.Plan.Load): a restart or an upgrade moves
// no point later.
func (r *rechecks) Load(log []cursor.LoggedWindow, marks map[string]cursor.AlertMark, delays cursor.Delays) {
	if r.wlog == nil {
		r.delays = delays.Clone()
		r.wlog = wlog{}
		if r.rechecking() {
			log = r.pts().Load(log)
		}
		for _, w := range log {
			r.wlog[w.Start] = w
		}
	}
	if r.alerts != nil && !r.marksLoaded {
		r.marksLoaded = true
		for id, m := range marks {
			r.alerts.Seed(id, m)
		}
	}
}

// A run's rechecks and alert re-asks (rechecks.go) fetch, build and emit
// through these methods of the run.

// askPage fetches page idx of w: the first page when next is empty, else
// the next-page URL next; recheck ranks the request as a recheck (after
// fresh windows, before backfill); count asks the first page only for its
// count (run.fetchAs).
func (r *run) askPage(ctx context.Context, w window.Window, next string, idx int, recheck, count bool) (pagescan.Body, time.Time, error) {
	f, err := r.fetchAs(ctx, w, next, idx, recheck, count)
	if err != nil {
		return pagescan.Body{}, time.Time{}, err
	}
	return f.body, f.received, nil
}

// emitRevisit hands records of page idx of w, received then, on as
// Revisit pages that leave the cursor as it stands; the last carries lc.
// late: the records it delivers are late records a recheck recovered
// (rechecks.observeLate), not alert updates.
func (r *run) emitRevisit(ctx context.Context, w window.Window, idx int, records []json.RawMessage, received time.Time, lc *cursor.LogChanges, late bool) error {
	return r.emitRecords(ctx, w, idx, records, received, r.cur, true, &emitExtra{log: func() *cursor.LogChanges { return lc }, late: late})
}

// envelopes returns the envelopes of records fetched in w.
func (r *run) envelopes(records []json.RawMessage, w window.Window, received time.Time) ([]record.Envelope, error) {
	return r.p.eb.Build(records, w, received)
}
