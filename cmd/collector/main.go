// Command collector exports the platform's activity and audit data into
// Kafka, ClickHouse or files. See README.md.
//
//	collector run   --config FILE [--once] [--no-progress]
//	collector check --config FILE [--offline] [--print] [--timeout 10s]
//	collector state --config FILE [--json] [--watch [--interval 2s]] [--reset SOURCE[/ACCOUNT]]
//	collector verify --config FILE [--source S] [--account A] [--from T] [--to T] [--sink NAME] [--json] [--dry-run] [--yes]
//	collector healthcheck [--addr HOST:PORT] [--path /readyz] [--timeout 3s]
//	collector tap --source S [--account A] [--limit N] [--sample R] [--timeout D] [--config FILE | --addr HOST:PORT | --url URL]
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
	"github.com/svcexport/collector/internal/memlimit"
	"github.com/svcexport/collector/internal/status"
)

// Stamped at build time with -ldflags "-X main.version=... -X main.commit=... -X main.date=..."
// (scripts/release-build.sh); an unstamped version is the VERSION file's
// plus "-dev" (buildInfo).
var (
	version = ""
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
        validate, summarise the configuration (--print: all of it), warn of a
        start beyond api.max_history, ask for one token, check the sink, and
        say how many API requests it spent
  collector check --config FILE --offline
        validate only: no secrets needed, no file read, no network (CI lint)
  collector check --config FILE --print [--offline]
        print the resolved configuration as YAML (loads back the same) and its streams
  collector state --config FILE [--json] [--watch [--interval 2s]]
        show progress per source and account (--watch: refresh until interrupted)
  collector state --config FILE --reset SOURCE[/ACCOUNT]
        forget the progress of a stream (collector stopped)
  collector verify --config FILE [--source S] [--account A] [--from T] [--to T]
                   [--sink NAME] [--json] [--dry-run] [--yes]
        re-count the committed windows at the API and compare, per stream and
        UTC day, with what the sink delivered; exit 1 on a gap. Prints the
        requests it will spend first (the running collector's budget) and
        asks before it spends them (--yes: don't ask; --dry-run: plan only).
        T is RFC 3339 or YYYY-MM-DD (UTC midnight). See docs/verify.md
  collector healthcheck [--addr 127.0.0.1:9464] [--path /readyz] [--timeout 3s]
        GET /readyz of the running collector: exit 0 ready, 1 not (container health checks)
  collector tap --source S [--account A] [--limit 100] [--sample 1] [--timeout D] [--config FILE | --addr 127.0.0.1:9464 | --url URL]
        print what the running collector delivers of a source, as NDJSON envelopes
        (no API request; a slow reader loses lines, never slows the collector);
        the collector is the one at --config's metrics.listen, --addr or --url
  collector version
        print the version (the release build's, else the commit go build recorded)

Configuration: a YAML file (configs/collector.yaml documents every key), whose
values may hold ${VAR}, ${VAR:-default}, ${file:PATH} ($${ for a literal ${),
then environment variables COLLECTOR_<KEY PATH> with __ between levels, e.g.
COLLECTOR_API__SECRET, COLLECTOR_SINK__KAFKA__BROKERS="[host1:9092, host2:9092]".
Exit codes: 0 done, 1 failure (verify: a gap), 2 bad command line or configuration.
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
		v, c, d := buildInfo()
		fmt.Fprintf(stdout, "collector %s (commit %s, built %s)\n", v, c, d)
		return exitOK
	case "healthcheck":
		return healthcheck(rest, stdout, stderr)
	case "tap":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return tapCmd(ctx, rest, stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "run", "check", "state", "verify":
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
	var vo app.VerifyOptions
	var from, to string
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
	case "verify":
		fs.StringVar(&vo.Source, "source", "", "verify only this source")
		fs.StringVar(&vo.Account, "account", "", "verify only this account (\"org\": organization-level audit logs; edge streams: edge.account)")
		fs.StringVar(&from, "from", "", "verify records from this time on: RFC 3339 or YYYY-MM-DD (default: sources.*.start when a time, else a day before the watermark)")
		fs.StringVar(&to, "to", "", "verify records before this time: RFC 3339 or YYYY-MM-DD (default and at most: the watermark)")
		fs.StringVar(&vo.Sink, "sink", "", "the sink to count in, by name, when several are configured")
		fs.BoolVar(&vo.JSON, "json", false, "print JSON (and nothing else) on standard output")
		fs.BoolVar(&vo.DryRun, "dry-run", false, "print the plan and its cost in requests; ask nothing of the API")
		fs.BoolVar(&vo.Yes, "yes", false, "spend the requests without asking (needed when standard input is not a terminal)")
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
	if cmd == "verify" {
		var err error
		if vo.From, err = parseFlagTime("from", from); err == nil {
			vo.To, err = parseFlagTime("to", to)
		}
		if err != nil {
			fmt.Fprintf(stderr, "collector verify: %v\n", err)
			return exitUsage
		}
	}
	offline := cmd == "check" && co.Offline
	loaded, err := config.LoadWith(*cfgPath, os.Environ(), config.LoadOptions{Offline: offline, SecretsOptional: cmd == "state" || (cmd == "verify" && vo.DryRun)})
	cfg := loaded.Config
	if err == nil || isProblems(err) {
		// simulator.settings, checked with the rest, in the same report.
		err = errors.Join(err, app.Validate(cfg))
	}
	for _, n := range loaded.Notes {
		fmt.Fprintf(stderr, "config: note: %s\n", n)
	}
	if err == nil && !offline && cmd != "state" && !(cmd == "verify" && vo.DryRun) {
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
	ver, com, _ := buildInfo()
	opts := app.Options{Log: log, Stdout: stdout, Version: ver, Commit: com}
	if bars != nil {
		opts.Progress = bars
	}
	so.Notes = stderr
	so.Terminal = isTerminal(stdout)

	ctx, stop := signalContext(log)
	defer stop()
	switch cmd {
	case "run":
		self, _ := os.ReadFile("/proc/self/cgroup") // none off Linux: no limit
		if limit, merr := memlimit.Set("/sys/fs/cgroup", self, os.Getenv); merr != nil {
			log.Warn("no Go memory limit from the container's", "err", merr)
		} else if limit > 0 {
			log.Info("Go memory limit set from the container's memory limit (GOMEMLIMIT overrides)", "limit_mib", limit>>20, "share", memlimit.Share)
		}
		err = app.Run(ctx, cfg, opts, once)
		if bars != nil {
			bars.Close() // done already when the run got going; the lines below go straight out
		}
	case "check":
		err = app.Check(ctx, cfg, opts, co)
	case "state":
		err = app.State(ctx, cfg, opts, so)
	case "verify":
		vo.Notes, vo.Stdin, vo.Interactive = stderr, os.Stdin, status.IsTerminal(os.Stdin)
		code, err := app.Verify(ctx, cfg, opts, vo)
		return verifyExit(code, err, stderr)
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

// verifyExit prints why verify did not pass (one line; a configuration
// error as "config: key: message") and returns its exit status.
func verifyExit(code int, err error, stderr io.Writer) int {
	if err == nil {
		return code
	}
	var ke *config.KeyError
	if errors.As(err, &ke) {
		for _, line := range config.Lines(err, maxProblems) {
			fmt.Fprintf(stderr, "config: %s\n", line)
		}
		return exitUsage
	}
	fmt.Fprintf(stderr, "collector verify: %v\n", err)
	if code == exitOK {
		return exitFailed
	}
	return code
}

// parseFlagTime reads the value of --name: RFC 3339, or a date (its UTC
// midnight); "" is the zero time.
func parseFlagTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("--%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a date (2026-01-02)", name, v)
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

// signalContext is cancelled by the first SIGINT, SIGTERM or SIGHUP (a
// graceful stop: drain, flush, commit); a second SIGINT or SIGTERM exits at
// once. SIGHUP, which its peers take as "reload the configuration", stops
// gracefully too until the collector reloads in place: a supervisor
// (Kubernetes, systemd's Restart=always) starts it again with the new
// configuration, and nothing is lost. A SIGHUP while stopping is ignored:
// a reload sent twice must not cut the drain short.
func signalContext(log *slog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			if s == syscall.SIGHUP {
				log.Warn("stopping gracefully: the configuration is not reloaded in place yet; the supervisor starts the collector again with it",
					"signal", s.String())
			} else {
				log.Info("stopping", "signal", s.String())
			}
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case s := <-ch:
				if s == syscall.SIGHUP {
					log.Info("already stopping gracefully", "signal", s.String())
					continue
				}
				log.Error("second signal: exiting without draining", "signal", s.String())
				os.Exit(exitFailed)
			case <-done:
				return
			}
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
