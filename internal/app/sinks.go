package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/pipeline"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
	"github.com/svcexport/collector/internal/sink/stdout"
	"github.com/svcexport/collector/internal/status"
)

// newSink builds the sink sc configures, named sc.SinkName() in its
// metrics and dead-letter file (sinkhelper.Named), so that two sinks of one
// type never collide. deadLetterDir is where sinks put records that can
// never be written (next to the checkpoint). scr is the process's secret
// scrubber (newScrubber), for the sinks whose errors may hold a server's
// words. Its errors name sc's keys.
func newSink(sc config.SinkConfig, streams []record.Stream, deadLetterDir string, reg prometheus.Registerer, log *slog.Logger, out io.Writer,
	scr *secret.Scrubber,
) (sink.Sink, error) {
	name := sc.SinkName()
	reg = sinkhelper.Named(reg, name)
	if name != sc.Type {
		log = log.With("sink_name", name)
	}
	var s sink.Sink
	var err error
	switch sc.Type {
	case config.SinkFile:
		s, err = file.New(sc.File, reg, log)
	case config.SinkStdout:
		s, err = stdout.New(sc.Stdout, out, reg)
	case config.SinkKafka:
		s, err = kafka.New(sc.Kafka, streams, deadLetterDir, reg, log, kafka.WithScrubber(scr))
	case config.SinkClickHouse:
		s, err = clickhouse.New(sc.ClickHouse, reg, log, clickhouse.WithScrubber(scr))
	default:
		return nil, &config.KeyError{Key: sc.Key() + ".type", Msg: fmt.Sprintf("unknown sink %q", sc.Type)}
	}
	if err != nil {
		return nil, sc.KeyedError(err)
	}
	return s, nil
}

// sinkRun is one configured sink of a run: its configuration, the sink,
// and the last error of starting it (for /readyz).
type sinkRun struct {
	cfg   config.SinkConfig
	sink  sink.Sink
	ready readiness
}

// name is the sink's configured name.
func (r *sinkRun) name() string { return r.cfg.SinkName() }

// newSinks builds every configured sink (Config.Sinks), in order.
func newSinks(cfg config.Config, streams []record.Stream, deadLetterDir string, reg prometheus.Registerer, log *slog.Logger, out io.Writer,
	scr *secret.Scrubber,
) ([]*sinkRun, error) {
	var runs []*sinkRun
	for _, sc := range cfg.Sinks() {
		s, err := newSink(sc, streams, deadLetterDir, reg, log, out, scr)
		if err != nil {
			return nil, err
		}
		runs = append(runs, &sinkRun{cfg: sc, sink: s})
	}
	return runs, nil
}

// targets are the pipeline's destinations: every sink under its name.
func targets(runs []*sinkRun) []pipeline.Target {
	out := make([]pipeline.Target, len(runs))
	for i, r := range runs {
		out[i] = pipeline.Target{Name: r.name(), Sink: r.sink}
	}
	return out
}

// describeSinks names the sinks for the startup log: "siem (kafka), lake
// (clickhouse)".
func describeSinks(runs []*sinkRun) string {
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = r.name()
		if r.name() != r.cfg.Type {
			parts[i] += " (" + r.cfg.Type + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// startSinks starts every sink at once, each retrying while its
// destination is unreachable (startSink), and returns when all started.
// When one cannot start (a stop, a configuration error), the others are
// given up too and the error names the sink.
func startSinks(ctx context.Context, runs []*sinkRun, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first error // the failure that gave the others up
	var once sync.Once
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			l := log
			if len(runs) > 1 {
				l = log.With("sink", r.name())
			}
			start := func(ctx context.Context) error { return r.cfg.Rekeyed(r.sink.Start(ctx)) }
			if err := startSink(ctx, start, &r.ready, l); err != nil {
				once.Do(func() {
					if len(runs) > 1 {
						err = fmt.Errorf("sink %s: %w", r.name(), err)
					}
					first = err
					cancel()
				})
			}
		})
	}
	wg.Wait()
	return first
}

// shutdownSinks shuts every sink down at once within ctx, logging errors.
func shutdownSinks(ctx context.Context, runs []*sinkRun, log *slog.Logger) {
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			if err := r.sink.Shutdown(ctx); err != nil {
				log.Error("sink shutdown", "sink", r.name(), "err", err)
			}
		})
	}
	wg.Wait()
}

// allReady returns nil when every sink says it can write now.
func allReady(ctx context.Context, runs []*sinkRun) error {
	for _, r := range runs {
		if err := r.sink.Ready(ctx); err != nil {
			return err
		}
	}
	return nil
}

// pipelineState is what status reads of the pipeline: its states, and the
// sinks' lags per stream.
type pipelineState struct{ *pipeline.Pipeline }

var _ status.SinkLagger = pipelineState{}

// SinkLagsByStream implements status.SinkLagger.
func (p pipelineState) SinkLagsByStream() map[record.Stream][]status.SinkLag {
	in := p.StreamSinkLags()
	out := make(map[record.Stream][]status.SinkLag, len(in))
	for k, ls := range in {
		sl := make([]status.SinkLag, len(ls))
		for i, l := range ls {
			sl[i] = status.SinkLag{Sink: l.Sink, Delivery: l.Delivery, PendingRecords: l.Records, OldestPendingSeconds: l.Oldest.Round(time.Millisecond).Seconds()}
		}
		out[k] = sl
	}
	return out
}
