package app

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/status"
	"github.com/svcexport/collector/internal/telemetry"
)

// errSinkStarting is a sink's readiness before its first start attempt
// ended: the sink is not started yet.
var errSinkStarting = errors.New("starting")

// startup says what a starting daemon waits for, from the moment its
// telemetry server listens until its pipeline runs (issue 20: with a sink
// down at start, /state answered 404 and nothing said why). It is the
// "start" check of /readyz and the Starting note of every /state line
// meanwhile. Its methods are safe for concurrent use.
type startup struct {
	mu    sync.Mutex
	sinks []*sinkRun // the sinks being started; nil before they are built
	done  bool
}

// waitFor marks every sink of runs as not started (errSinkStarting, until
// its first start attempt ends) and makes the start wait for them.
func (s *startup) waitFor(runs []*sinkRun) {
	for _, r := range runs {
		r.ready.set(errSinkStarting)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sinks = runs
}

// finish marks the start as over: the pipeline runs.
func (s *startup) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
}

// err says what the start waits for, nil once it is over: the sinks not
// started yet, each with its last start error ("waiting for sink lake:
// clickhouse sink: dial tcp ...: connection refused").
func (s *startup) err() error {
	s.mu.Lock()
	done, runs := s.done, s.sinks
	s.mu.Unlock()
	if done {
		return nil
	}
	var waiting []string
	for _, r := range runs {
		if err := r.ready.get(); err != nil {
			waiting = append(waiting, r.name()+": "+err.Error())
		}
	}
	switch len(waiting) {
	case 0:
		return errors.New("starting")
	case 1:
		return errors.New("waiting for sink " + waiting[0])
	}
	return errors.New("waiting for sinks " + strings.Join(waiting, "; "))
}

// note is err's text, "" once the start is over.
func (s *startup) note() string {
	if err := s.err(); err != nil {
		return err.Error()
	}
	return ""
}

// startTelemetry starts the telemetry server on metrics.listen (nil when
// none is configured) before the sinks start, so that /healthz, /readyz
// and /state answer from the start of the process: /readyz fails with the
// "start" check until st finishes, and /state serves the streams as store
// holds them (streams of srcCfg) with what the start waits for, until Run
// hands /state to the status reporter. The caller shuts the server down.
func startTelemetry(ctx context.Context, listen string, pprof bool, reg *prometheus.Registry, log *slog.Logger, store *checkpoint.DB,
	srcCfg catalog.Config, streams []record.Stream, st *startup) (*telemetry.Server, error) {
	if listen == "" {
		return nil, nil
	}
	stored, err := store.All(ctx)
	if err != nil {
		return nil, err
	}
	windows := make(map[record.Stream][]cursor.LoggedWindow, len(stored))
	for k := range stored {
		if windows[k], err = store.Windows(ctx, k); err != nil {
			return nil, err
		}
	}
	tel := telemetry.New(listen, reg, log)
	if pprof {
		tel.ServeProfiles()
	}
	tel.AddReadiness("start", func(context.Context) error { return st.err() })
	tel.AddHandler("/state", status.StartingHandler(srcCfg, stored, windows, streams, st.note))
	if err := tel.Start(ctx); err != nil {
		return nil, err
	}
	return tel, nil
}

// shutdownTelemetry stops tel (nil: nothing to stop) within 5 s.
func shutdownTelemetry(tel *telemetry.Server) {
	if tel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = tel.Shutdown(ctx)
}
