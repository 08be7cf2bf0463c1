package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/pipeline"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
)

// progress reports a running collector's progress: a log line every
// interval, the backlog gauges, and the live /state endpoint.
type progress struct {
	cfg     config.Config
	set     *source.Set
	pl      *pipeline.Pipeline
	log     *slog.Logger
	est     *estimator
	started time.Time

	windowsLeft *prometheus.GaugeVec
	eta         *prometheus.GaugeVec

	lastRows int64
	lastAt   time.Time
}

func newProgress(cfg config.Config, streams []record.Stream, set *source.Set, pl *pipeline.Pipeline, reg prometheus.Registerer, log *slog.Logger) *progress {
	p := &progress{cfg: cfg, set: set, pl: pl, log: log, est: newEstimator(cfg.SourceConfig(), streams), started: time.Now(),
		windowsLeft: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_backfill_windows_left",
			Help: "Estimated windows left before the stream caught up with now - lag.",
		}, []string{"source", "account"}),
		eta: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_catchup_eta_seconds",
			Help: "Estimated seconds until the stream caught up (0 when caught up, -1 unknown).",
		}, []string{"source", "account"}),
	}
	reg.MustRegister(p.windowsLeft, p.eta)
	p.lastAt = p.started
	return p
}

// states merges the acknowledged states with the pollers' live view.
func (p *progress) states(now time.Time) []StreamState {
	acked := p.pl.States()
	out := make([]StreamState, 0, len(p.set.Pollers))
	for _, pl := range p.set.Pollers {
		k := pl.Stream()
		st := acked[k]
		snap := pl.Snapshot()
		s := StreamState{Source: k.Source, Account: k.Account, Watermark: st.Watermark, Delivered: st.Delivered, LastError: snap.LastError}
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
		p.est.fill(&s, density, now)
		s.WindowsLeft = snap.Backlog.Windows
		s.CaughtUp = snap.CaughtUp
		if eta, ok := snap.ETA(now); ok {
			s.ETASeconds = eta.Seconds()
		}
		out = append(out, s)
	}
	return out
}

func (p *progress) run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.report(false)
		}
	}
}

func (p *progress) report(final bool) {
	now := time.Now()
	states := p.states(now)
	rows := p.pl.Delivered()
	caught := 0
	maxLag := 0.0
	for _, s := range states {
		if s.CaughtUp {
			caught++
		}
		maxLag = max(maxLag, s.LagSeconds)
		p.windowsLeft.WithLabelValues(s.Source, s.Account).Set(float64(s.WindowsLeft))
		p.eta.WithLabelValues(s.Source, s.Account).Set(s.ETASeconds)
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
	if p.cfg.Log.Progress > 0 || final {
		p.log.Info(msg, "rows_delivered", rows, "rows_per_second", int64(rate), "streams_caught_up", caught,
			"streams", len(states), "max_lag", time.Duration(maxLag*float64(time.Second)).Round(time.Second).String(),
			"elapsed", now.Sub(p.started).Round(time.Millisecond).String())
	}
}

func (p *progress) summary() { p.report(true) }

func (p *progress) stateHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.states(time.Now()))
	})
}
