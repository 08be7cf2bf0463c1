// Command collector exports the platform's activity and audit data into
// Kafka, ClickHouse or files. See README.md.
//
//	collector run --config FILE [--once]
//	collector check --config FILE
//	collector state --config FILE [--reset SOURCE[/ACCOUNT]] [--json]
//	collector version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/svcexport/collector/internal/app"
	"github.com/svcexport/collector/internal/config"
)

// Stamped at build time with -ldflags "-X main.version=... -X main.commit=... -X main.date=...".
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // a runtime failure
	exitUsage  = 2 // a bad command line or configuration
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `collector exports the platform's activity and audit data (nine sources) into
Kafka, ClickHouse, files or stdout, completely, once, and as fresh as the
API's rate budget allows.

Usage:
  collector run   --config FILE [--once]    run the daemon (--once: exit 0 when every source caught up)
  collector check --config FILE             validate the configuration, ask for one token, check the sink
  collector state --config FILE [--reset SOURCE[/ACCOUNT]] [--json]
                                            show progress per source and account, or forget one
  collector version                         print the version

Configuration: a YAML file (configs/collector.yaml documents every key), then
environment variables COLLECTOR_<KEY PATH> with __ between levels, e.g.
COLLECTOR_API__SECRET, COLLECTOR_SINK__KAFKA__BROKERS="[host1:9092, host2:9092]".
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "collector %s (commit %s, built %s)\n", version, commit, date)
		return exitOK
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "run", "check", "state":
	default:
		fmt.Fprintf(stderr, "collector: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}

	fs := flag.NewFlagSet("collector "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (YAML); required")
	once := false
	var so app.StateOptions
	var co app.CheckOptions
	switch cmd {
	case "check":
		fs.DurationVar(&co.Timeout, "timeout", 10*time.Second, "deadline of each online step (DNS, connect, TLS, token, sink)")
	case "run":
		fs.BoolVar(&once, "once", false, "exit 0 once every source has caught up to now - lag (cron-style runs, tests, benchmarks)")
	case "state":
		fs.StringVar(&so.Reset, "reset", "", "forget the progress of SOURCE or SOURCE/ACCOUNT (the collector must be stopped)")
		fs.BoolVar(&so.JSON, "json", false, "print JSON")
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "collector %s: unexpected argument %q\n", cmd, fs.Arg(0))
		return exitUsage
	}
	if *cfgPath == "" {
		fmt.Fprintf(stderr, "collector %s: --config is required\n", cmd)
		return exitUsage
	}
	cfg, err := config.Load(*cfgPath, os.Environ())
	if err == nil {
		err = app.Validate(cfg) // simulator.settings
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "config: %s\n", line)
		}
		return exitUsage
	}
	if cmd != "state" {
		// Secret and TLS files are read now, so that a missing or empty
		// one is a configuration error naming its key (exit 2), not a
		// failure at the first request.
		if err := cfg.CheckFiles(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(stderr, "config: %s\n", line)
			}
			return exitUsage
		}
	}
	log := newLogger(cfg.Log, stderr)
	opts := app.Options{Log: log, Stdout: stdout, Version: version, Commit: commit}

	ctx, stop := signalContext(log)
	defer stop()
	switch cmd {
	case "run":
		err = app.Run(ctx, cfg, opts, once)
	case "check":
		err = app.Check(ctx, cfg, opts, co)
	case "state":
		err = app.State(ctx, cfg, opts, so)
	}
	if err != nil {
		if !errors.Is(err, app.ErrCheckFailed) {
			log.Error("collector "+cmd+" failed", "err", err)
		}
		var ke *config.KeyError
		if errors.As(err, &ke) {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// signalContext is cancelled by the first SIGINT or SIGTERM (a graceful
// stop: drain, flush, commit); a second one exits at once.
func signalContext(log *slog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			log.Info("stopping", "signal", s.String())
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-ch:
			log.Error("second signal: exiting without draining", "signal", s.String())
			os.Exit(exitFailed)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

func newLogger(c config.LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
