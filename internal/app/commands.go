package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/status"
)

// CheckOptions tune the check command.
type CheckOptions struct {
	// Timeout bounds each online step (DNS, connect, TLS, the token
	// request, the sink). Default 10s.
	Timeout time.Duration
}

func (co CheckOptions) timeout() time.Duration {
	if co.Timeout <= 0 {
		return 10 * time.Second
	}
	return co.Timeout
}

// redactedURL is u without the password of its userinfo, if any.
func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "<unparsable URL>"
	}
	return p.Redacted()
}

// ErrCheckFailed is returned by Check when a check did not pass; the report
// says which.
var ErrCheckFailed = errors.New("check failed")

// Check validates the configuration (already done by loading it), prints the
// effective configuration with secrets redacted, asks the core API for one
// token, and checks every sink can be reached, without moving any data.
func Check(ctx context.Context, cfg config.Config, o Options, co CheckOptions) error {
	o = o.withDefaults()
	w := o.Stdout
	dump, err := cfg.Dump()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "# effective configuration (secrets redacted)")
	w.Write(dump)
	fmt.Fprintln(w)

	srcCfg, sim, err := resolveSource(cfg, o.Log)
	if err != nil {
		return err
	}
	if sim != nil {
		defer sim.Close()
	}
	failed := false
	report := func(what string, err error) {
		if err != nil {
			failed = true
			fmt.Fprintf(w, "FAIL  %s: %v\n", what, err)
			return
		}
		fmt.Fprintf(w, "ok    %s\n", what)
	}
	// One attempt, within the check's deadline: check reports a cause in
	// seconds; the daemon's retries are for the daemon.
	srcCfg.API.Retry.MaxAttempts = 1
	srcCfg.API.Timeout = min(srcCfg.API.Timeout, co.timeout())
	srcCfg.Edge.Timeout = min(srcCfg.Edge.Timeout, co.timeout())
	set, err := source.Build(srcCfg, nil, source.Options{Client: api.Options{Logger: o.Log}}, true)
	if err != nil {
		report("sources", err)
		return ErrCheckFailed
	}
	fmt.Fprintf(w, "ok    %d streams configured\n", len(set.Pollers))
	if set.Core != nil {
		if err := probe(ctx, srcCfg.API.BaseURL, co.timeout()); err != nil {
			report("core API at "+redactedURL(srcCfg.API.BaseURL), err)
		} else {
			cctx, cancel := context.WithTimeout(ctx, co.timeout())
			report("core API token from "+redactedURL(srcCfg.API.BaseURL), set.Core.Check(cctx))
			cancel()
		}
	}
	if set.Edge != nil {
		if err := probe(ctx, srcCfg.Edge.BaseURL, co.timeout()); err != nil {
			report("edge API at "+redactedURL(srcCfg.Edge.BaseURL), err)
		} else {
			fmt.Fprintf(w, "ok    edge API at %s reachable (token set; the edge API has no token endpoint to test it without spending a request)\n", redactedURL(srcCfg.Edge.BaseURL))
		}
	}
	for _, sc := range cfg.Sinks() {
		what := "sink " + sc.SinkName()
		if sc.SinkName() != sc.Type {
			what += " (" + sc.Type + ")"
		}
		report(what, checkSink(ctx, sc, source.Streams(srcCfg), o, co.timeout()))
	}
	if failed {
		return ErrCheckFailed
	}
	return nil
}

// checkSink checks that the sink sc can be reached (one of Config.Sinks).
func checkSink(ctx context.Context, sc config.SinkConfig, streams []record.Stream, o Options, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch sc.Type {
	case config.SinkKafka:
		rep, err := kafka.Check(ctx, sc.Kafka, streams)
		fmt.Fprint(o.Stdout, rep.String())
		return err
	case config.SinkClickHouse:
		s, err := clickhouse.New(sc.ClickHouse, prometheus.NewRegistry(), o.Log)
		if err != nil {
			return sc.KeyedError(err)
		}
		return s.Check(ctx)
	case config.SinkFile:
		return checkWritableDir(sc.File.Dir)
	}
	return nil
}

// checkWritableDir makes sure dir exists (creating it) and a file can be
// written there, without touching the files a running collector owns.
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".collector-check-*")
	if err != nil {
		return fmt.Errorf("directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// StateOptions select what the state command does.
type StateOptions struct {
	// Reset forgets the progress of SOURCE or SOURCE/ACCOUNT; the next run
	// starts that stream from its configured start.
	Reset string
	// JSON prints JSON instead of a table.
	JSON bool
}

// State prints, per stream, the watermark, lag, window in flight, rows
// delivered, windows left and an estimated time to catch up. It asks a
// running collector (its /state endpoint on metrics.listen) first and reads
// the checkpoint file when none answers.
func State(ctx context.Context, cfg config.Config, o Options, so StateOptions) error {
	o = o.withDefaults()
	if so.Reset != "" {
		return reset(ctx, cfg, o, so.Reset)
	}
	if states, err := status.Live(ctx, cfg.Metrics.Listen); err == nil {
		fmt.Fprintf(o.Stdout, "# live, from the running collector at %s\n", cfg.Metrics.Listen)
		return status.Print(o.Stdout, states, so.JSON)
	}
	keys, err := configuredStreams(cfg)
	if err != nil {
		return err
	}
	stored := map[record.Stream]checkpoint.State{}
	if _, err := os.Stat(cfg.Checkpoint.Path); err == nil {
		db, err := openCheckpoint(cfg, o.Log)
		if err != nil {
			return err
		}
		defer db.Close()
		if stored, err = db.All(ctx); err != nil {
			return err
		}
		fmt.Fprintf(o.Stdout, "# from the checkpoint %s\n", cfg.Checkpoint.Path)
	} else {
		fmt.Fprintf(o.Stdout, "# no checkpoint at %s yet: nothing collected\n", cfg.Checkpoint.Path)
	}
	return status.Print(o.Stdout, status.FromCheckpoint(cfg.SourceConfig(), stored, keys, time.Now()), so.JSON)
}

// configuredStreams lists the streams the configuration defines. It needs
// no credentials: state and reset work with the secrets absent.
func configuredStreams(cfg config.Config) ([]record.Stream, error) {
	sc := cfg.SourceConfig()
	if cfg.Simulator.Enabled {
		// The edge streams are on: the simulator serves the edge API.
		sc = simulatorEndpoints("http://127.0.0.1:1").Fill(sc)
	}
	streams := source.Streams(sc)
	if len(streams) == 0 {
		return nil, errors.New("sources: no source enabled")
	}
	return streams, nil
}

func reset(ctx context.Context, cfg config.Config, o Options, what string) error {
	src, account, _ := strings.Cut(what, "/")
	if _, ok := catalog.LookupSpec(src); !ok {
		return fmt.Errorf("--reset %s: unknown source %q (%s)", what, src, strings.Join(catalog.SpecNames(), ", "))
	}
	if _, err := os.Stat(cfg.Checkpoint.Path); err != nil {
		return fmt.Errorf("--reset: no checkpoint at %s: %w", cfg.Checkpoint.Path, err)
	}
	db, err := openCheckpoint(cfg, o.Log)
	if err != nil {
		return fmt.Errorf("--reset needs the collector stopped: %w", err)
	}
	defer db.Close()
	n, err := db.Reset(ctx, src, account)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "reset %d stream(s) of %s; they start again from sources.%s.start on the next run\n", n, what, src)
	return nil
}
