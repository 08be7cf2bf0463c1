// Command collector exports the platform's activity and audit data into
// Kafka, ClickHouse or files. See README.md.
//
//	collector run   --config FILE [--once] [--no-progress]
//	collector check --config FILE [--offline] [--print] [--timeout 10s]
//	collector state --config FILE [--json] [--watch [--interval 2s]] [--reset SOURCE[/ACCOUNT]]
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
	"syscall"
	"time"

	"github.com/svcexport/collector/internal/app"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/status"
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
  collector run   --config FILE [--once] [--no-progress]
        run the daemon (--once: exit 0 when every source caught up); on a
        terminal with text logs it shows a bar per source (--no-progress: off)
  collector check --config FILE [--timeout 10s]
        validate, print the effective configuration, ask for one token, check the sink
  collector check --config FILE --offline
        validate only: no secrets needed, no file read, no network (CI lint)
  collector check --config FILE --print [--offline]
        print the resolved configuration as YAML (loads back the same) and its streams
  collector state --config FILE [--json] [--watch [--interval 2s]]
        show progress per source and account (--watch: refresh until interrupted)
  collector state --config FILE --reset SOURCE[/ACCOUNT]
        forget the progress of a stream (collector stopped)
  collector version
        print the version

Configuration: a YAML file (configs/collector.yaml documents every key), whose
values may hold ${VAR}, ${VAR:-default}, ${file:PATH} ($${ for a literal ${),
then environment variables COLLECTOR_<KEY PATH> with __ between levels, e.g.
COLLECTOR_API__SECRET, COLLECTOR_SINK__KAFKA__BROKERS="[host1:9092, host2:9092]".
Exit codes: 0 done, 1 failure, 2 bad command line or configuration.
`

// maxProblems is how many configuration problems are printed, one a line,
// before a line counting the rest.
const maxProblems = 50

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
	once, noProgress := false, false
	var so app.StateOptions
	var co app.CheckOptions
	switch cmd {
	case "check":
		fs.DurationVar(&co.Timeout, "timeout", 10*time.Second, "deadline of each online step (DNS, connect, TLS, token, sink)")
		fs.BoolVar(&co.Offline, "offline", false, "validate only: no secrets required, no file read, no network; exit 0 or 2")
		fs.BoolVar(&co.Print, "print", false, "print the resolved configuration (YAML, secrets redacted) and its streams; no network")
	case "run":
		fs.BoolVar(&once, "once", false, "exit 0 once every source has caught up to now - lag (cron-style runs, tests, benchmarks)")
		fs.BoolVar(&noProgress, "no-progress", false, "no progress bars on the terminal")
	case "state":
		fs.StringVar(&so.Reset, "reset", "", "forget the progress of SOURCE or SOURCE/ACCOUNT (the collector must be stopped)")
		fs.BoolVar(&so.JSON, "json", false, "print JSON (and nothing else) on standard output")
		fs.BoolVar(&so.Watch, "watch", false, "print the state every --interval until interrupted (in place on a terminal)")
		fs.DurationVar(&so.Interval, "interval", 2*time.Second, "time between two snapshots of --watch")
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "collector %s: unexpected argument %q\n", cmd, fs.Arg(0))
		return exitUsage
	case *cfgPath == "":
		fmt.Fprintf(stderr, "collector %s: --config is required\n", cmd)
		return exitUsage
	case so.Interval <= 0 && cmd == "state":
		fmt.Fprintf(stderr, "collector state: --interval must be positive\n")
		return exitUsage
	case so.Reset != "" && so.Watch:
		fmt.Fprintf(stderr, "collector state: --reset and --watch do not go together\n")
		return exitUsage
	}
	offline := cmd == "check" && co.Offline
	loaded, err := config.LoadWith(*cfgPath, os.Environ(), config.LoadOptions{Offline: offline, SecretsOptional: cmd == "state"})
	cfg := loaded.Config
	if err == nil || isProblems(err) {
		// simulator.settings, checked with the rest, in the same report.
		err = errors.Join(err, app.Validate(cfg))
	}
	for _, n := range loaded.Notes {
		fmt.Fprintf(stderr, "config: note: %s\n", n)
	}
	if err == nil && !offline && cmd != "state" {
		// Secret and TLS files are read now, so that a missing or empty
		// one is a configuration error naming its key (exit 2), not a
		// failure at the first request.
		err = cfg.CheckFiles()
	}
	if err != nil {
		for _, line := range config.Lines(err, maxProblems) {
			fmt.Fprintf(stderr, "config: %s\n", line)
		}
		return exitUsage
	}

	var bars *status.Bars
	logOut := stderr
	if cmd == "run" && showProgress(cfg, noProgress, stdout, stderr) {
		bars = status.NewBars(stderr, 0)
		logOut = bars
	}
	log := newLogger(cfg.Log, logOut)
	opts := app.Options{Log: log, Stdout: stdout, Version: version, Commit: commit}
	if bars != nil {
		opts.Progress = bars
	}
	so.Notes = stderr
	so.Terminal = isTerminal(stdout)

	ctx, stop := signalContext(log)
	defer stop()
	switch cmd {
	case "run":
		err = app.Run(ctx, cfg, opts, once)
		if bars != nil {
			bars.Close() // done already when the run got going; the lines below go straight out
		}
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

// isProblems reports whether err is a report of configuration problems
// (KeyErrors), as opposed to a file that could not be read at all.
func isProblems(err error) bool {
	for _, p := range config.Problems(err) {
		var ke *config.KeyError
		if !errors.As(p, &ke) {
			return false
		}
	}
	return true
}

// showProgress decides whether run draws progress bars: only on a
// terminal (standard error), with text logs (they are printed above the
// bars; JSON logs stay one clean object a line, so the bars are off), and
// not when a stdout sink writes records to the same terminal.
func showProgress(cfg config.Config, noProgress bool, stdout, stderr io.Writer) bool {
	if noProgress || cfg.Log.Format != "text" || !isTerminal(stderr) {
		return false
	}
	for _, sk := range cfg.Sinks() {
		if sk.Type == config.SinkStdout && isTerminal(stdout) {
			return false
		}
	}
	return true
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && status.IsTerminal(f)
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
