package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
)

// Acked is what the reporter reads of the pipeline: every stream's
// acknowledged state, the records acknowledged since it started, and the
// streams a permanent sink error stopped. *pipeline.Pipeline implements
// it; the application's adapter adds the sinks' lags (SinkLagger).
type Acked interface {
	States() map[record.Stream]checkpoint.State
	Delivered() int64
	Failures() map[record.Stream]error
}

// Reporter reports a running collector's progress: a log line every
// interval, the backlog gauges (collector_backfill_windows_left,
// collector_catchup_eta_seconds) and the live /state endpoint. It merges
// the pipeline's acknowledged states with the pollers' live view. Its
// methods are safe for concurrent use with the pollers and the pipeline,
// except that Summary must follow the end of Run.
type Reporter struct {
	acked   Acked
	every   time.Duration
	log     *slog.Logger
	started time.Time
	// tenanted: the streams have tenants, and their series the label
	// tenant (streamLabels); lastCommit is the matching description.
	tenanted   bool
	lastCommit *prometheus.Desc

	// mu guards the streams reported (Update) and failingAfter, the
	// floor of failingFor (SetFailingAfter).
	mu           sync.Mutex
	pollers      []*source.Poller
	est          *estimator
	failingAfter time.Duration

	windowsLeft *prometheus.GaugeVec
	eta         *prometheus.GaugeVec

	lastRows int64
	lastAt   time.Time

	display Display
	rates   map[string]*rateWindow // by source, for the display
}

// NewReporter returns the reporter of pollers, whose acknowledged states
// acked holds. cfg and streams (every stream of cfg) size the backlog
// estimates; every is the interval of the progress line (log.progress, 0:
// no line, the gauges still move every 30 s). The gauges are registered
// with reg.
func NewReporter(cfg catalog.Config, streams []record.Stream, pollers []*source.Poller, acked Acked, every time.Duration,
	reg prometheus.Registerer, log *slog.Logger) (*Reporter, error) {
	tenanted := false
	for _, k := range streams {
		tenanted = tenanted || k.Tenant != ""
	}
	p := &Reporter{pollers: pollers, acked: acked, every: every, log: log, est: newEstimator(cfg, streams), started: time.Now(),
		failingAfter: DefaultFailingAfter, tenanted: tenanted, lastCommit: lastCommitDesc(tenanted),
		windowsLeft: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_backfill_windows_left",
			Help: "Estimated windows left before the stream caught up with now - lag.",
		}, streamLabels(tenanted)),
		eta: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_catchup_eta_seconds",
			Help: "Estimated seconds until the stream caught up (0 when caught up, -1 unknown).",
		}, streamLabels(tenanted)),
	}
	for _, c := range []prometheus.Collector{p.windowsLeft, p.eta, commitCollector{p}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("status metrics: %w", err)
		}
	}
	// Every stream's backlog series from the start (the first estimate
	// follows at the first report): ETA unknown until then.
	for _, pl := range pollers {
		k := pl.Stream()
		p.windowsLeft.WithLabelValues(p.lv(k)...)
		p.eta.WithLabelValues(p.lv(k)...).Set(-1)
	}
	p.lastAt = p.started
	return p, nil
}

// current returns the pollers reported now.
func (p *Reporter) current() []*source.Poller {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pollers
}

// Update makes the reporter report pollers, the streams of cfg (streams),
// from now on: a configuration reload (issue 33) added, removed or
// restarted some. The backlog series of a new stream start with its ETA
// unknown; those of a stream no longer collected are deleted.
func (p *Reporter) Update(cfg catalog.Config, streams []record.Stream, pollers []*source.Poller) {
	p.mu.Lock()
	old := p.pollers
	p.pollers, p.est = pollers, newEstimator(cfg, streams)
	p.mu.Unlock()
	now := map[record.Stream]bool{}
	for _, pl := range pollers {
		now[pl.Stream()] = true
	}
	was := map[record.Stream]bool{}
	for _, pl := range old {
		k := pl.Stream()
		was[k] = true
		if !now[k] {
			p.windowsLeft.DeleteLabelValues(p.lv(k)...)
			p.eta.DeleteLabelValues(p.lv(k)...)
		}
	}
	for _, pl := range pollers {
		if k := pl.Stream(); !was[k] {
			p.windowsLeft.WithLabelValues(p.lv(k)...)
			p.eta.WithLabelValues(p.lv(k)...).Set(-1)
		}
	}
}

// States merges the acknowledged states with the pollers' live view, one
// line per poller, at now. A stream the sink stopped shows that error as
// its last.
func (p *Reporter) States(now time.Time) []StreamState {
	acked := p.acked.States()
	failures := p.acked.Failures()
	var lags map[record.Stream][]SinkLag
	if sl, ok := p.acked.(SinkLagger); ok {
		lags = sl.SinkLagsByStream()
	}
	p.mu.Lock()
	pollers, est := p.pollers, p.est
	p.mu.Unlock()
	out := make([]StreamState, 0, len(pollers))
	for _, pl := range pollers {
		k := pl.Stream()
		st := acked[k]
		snap := pl.Snapshot()
		s := StreamState{Tenant: k.Tenant, Source: k.Source, Account: k.Account, Watermark: st.Watermark, Delivered: st.Delivered, LastError: snap.LastError}
		if !st.Watermark.IsZero() {
			s.LagSeconds = now.Sub(st.Watermark).Seconds()
		}
		if f := snap.InFlight; f != nil {
			s.InFlight = &InFlightState{Start: f.Window.Start, End: f.Window.End, Pages: f.Pages, Rows: f.Rows}
		}
		density := snap.Density
		if density == 0 {
			density = st.Density
		}
		est.fill(&s, density, now)
		s.WindowsLeft = snap.Backlog.Windows
		s.CaughtUp = snap.CaughtUp
		s.RecheckPending = snap.RecheckPending
		s.CadenceSeconds, s.CadenceBound = snap.Cadence.Every.Seconds(), snap.Cadence.Bound
		s.Late = lateState(snap.Delays, snap.RecheckDense, snap.RecheckCadence)
		if eta, ok := snap.ETA(now); ok {
			s.ETASeconds = eta.Seconds()
		}
		if err := failures[k]; err != nil {
			s.LastError = err.Error()
		}
		s.Sinks = lags[k]
		if snap.Blocked {
			s.Blocked = &BlockedState{Reason: snap.BlockedReason, Since: snap.BlockedSince, Error: snap.BlockedError}
		}
		s.Learnt = learntState(snap.Limits, snap.SplitAt)
		out = append(out, s)
	}
	return out
}

// ShowOn makes Run update d a few times a second and close it when it
// ends. Call it before Run.
func (p *Reporter) ShowOn(d Display) { p.display = d }

// displayEvery is how often the display is updated.
const displayEvery = 250 * time.Millisecond

// Run reports every interval until ctx ends; with a display (ShowOn) it
// updates it meanwhile, and draws it a last time and closes it at the end.
func (p *Reporter) Run(ctx context.Context) {
	every := p.every
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var show <-chan time.Time
	if p.display != nil {
		st := time.NewTicker(displayEvery)
		defer st.Stop()
		show = st.C
		p.display.Show(p.Sources(time.Now()))
		defer func() {
			p.display.Show(p.Sources(time.Now()))
			p.display.Close()
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.report(false)
		case <-show:
			p.display.Show(p.Sources(time.Now()))
		}
	}
}

func (p *Reporter) report(final bool) {
	now := time.Now()
	states := p.States(now)
	rows := p.acked.Delivered()
	caught := 0
	maxLag := 0.0
	for _, s := range states {
		if s.CaughtUp {
			caught++
		}
		maxLag = max(maxLag, s.LagSeconds)
		k := record.Stream{Tenant: s.Tenant, Source: s.Source, Account: s.Account}
		p.windowsLeft.WithLabelValues(p.lv(k)...).Set(float64(s.WindowsLeft))
		p.eta.WithLabelValues(p.lv(k)...).Set(s.ETASeconds)
	}
	el := now.Sub(p.lastAt).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(rows-p.lastRows) / el
	}
	p.lastRows, p.lastAt = rows, now
	msg := "progress"
	if final {
		msg = "done"
		rate = float64(rows) / max(now.Sub(p.started).Seconds(), 1e-9)
	}
	if p.every > 0 || final {
		pct, eta := overall(p.snapshots(), now)
		p.log.Info(msg, "rows_delivered", rows, "rows_per_second", int64(rate), "percent", pct, "eta", eta,
			"streams_caught_up", caught, "streams", len(states),
			"max_lag", time.Duration(maxLag*float64(time.Second)).Round(time.Second).String(),
			"elapsed", now.Sub(p.started).Round(time.Millisecond).String())
	}
}

// Summary logs the final line: rows delivered, the mean rate, streams
// caught up.
func (p *Reporter) Summary() { p.report(true) }

// Handler serves the live states as JSON, for GET /state (see Live).
func (p *Reporter) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.States(time.Now()))
	})
}

// Live asks the collector whose telemetry server listens on listen
// (metrics.listen) for its live states (its /state endpoint), within 2 s.
func Live(ctx context.Context, listen string) ([]StreamState, error) {
	if listen == "" {
		return nil, errors.New("no metrics.listen")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+listen+"/state", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var states []StreamState
	if err := json.NewDecoder(resp.Body).Decode(&states); err != nil {
		return nil, err
	}
	return states, nil
}
