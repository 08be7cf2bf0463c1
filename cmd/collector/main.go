// Command collector exports the platform's activity and audit data into
// Kafka, ClickHouse or files. See README.md; `collector --help` lists the
// commands, and docs/cli holds the same reference as markdown, generated
// from the command definitions (cli.go).
package main

import (
	"context"
	"errors"
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

// maxProblems is how many configuration problems are printed, one a line,
// before a line counting the rest.
const maxProblems = 50

// loadFlags say how a command reads its configuration.
type loadFlags struct {
	offline         bool   // check --offline: no secrets, no files, no network
	secretsOptional bool   // state, verify --dry-run: no API request
	progress        bool   // run: bars on a terminal
	reload          bool   // run: SIGHUP reloads the configuration (app.Options.Reload)
	shard           string // run --shard: over the key shard (COLLECTOR_SHARD)
	emptyShard      bool   // run, state: a shard that owns no tenant is served (idle, or shown empty)
}

// runWith finds the configuration (configPath of the --config flag cfgFlag),
// loads and validates it for command name, sets up the logger and the
// signals, runs body and returns the exit status: 2 for a bad command
// line or configuration, 1 when body fails.
func runWith(cfgFlag, name string, stdout, stderr io.Writer, body func(context.Context, config.Config, app.Options, *status.Bars) error, lf loadFlags) int {
	path, err := configPath(cfgFlag)
	if err != nil {
		return usage(stderr, "collector "+name, err)
	}
	cfg, notes, err := loadConfig(path, lf)
	for _, n := range notes {
		fmt.Fprintf(stderr, "config: note: %s\n", n)
	}
	if err != nil {
		for _, line := range config.Lines(err, maxProblems) {
			fmt.Fprintf(stderr, "config: %s\n", line)
		}
		return exitUsage
	}

	var bars *status.Bars
	logOut := stderr
	if lf.progress && showProgress(cfg, false, stdout, stderr) {
		bars = status.NewBars(stderr, 0)
		logOut = bars
	}
	log := newLogger(cfg.Log, logOut)
	ver, com, _ := buildInfo()
	opts := app.Options{Log: log, Stdout: stdout, Version: ver, Commit: com}
	if bars != nil {
		opts.Progress = bars
	}
	ctx, reloads, stop := signalContext(log, lf.reload)
	defer stop()
	if lf.reload {
		// The same file and environment, checked as the start was.
		opts.Reload = func() (config.Config, error) {
			cfg, notes, err := loadConfig(path, lf)
			for _, n := range notes {
				log.Info("config: note: " + n)
			}
			return cfg, err
		}
		opts.Reloads = reloads
	}
	if err := body(ctx, cfg, opts, bars); err != nil {
		if errors.Is(err, app.ErrCheckFailed) {
			// The report said what failed; the verdict, as verify and
			// tap end theirs.
			first, _, _ := strings.Cut(err.Error(), "\n")
			fmt.Fprintf(stderr, "collector %s: %s\n", name, first)
		} else {
			log.Error("collector "+name+" failed", "err", err)
		}
		var ke *config.KeyError
		if errors.As(err, &ke) {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// loadConfig loads the configuration at path and validates it as the
// command of lf needs it: every problem is a KeyError naming its key.
// It returns the load's notes too.
func loadConfig(path string, lf loadFlags) (config.Config, []string, error) {
	loaded, err := config.LoadWith(path, os.Environ(), config.LoadOptions{Offline: lf.offline, SecretsOptional: lf.secretsOptional})
	cfg := loaded.Config
	if lf.shard != "" {
		cfg.Shard = lf.shard
	}
	if err == nil {
		// Every command sees the shard's tenants only (docs/tenants.md,
		// "More collectors"); "ordinal/N" reads the host name (a
		// StatefulSet pod's is its name).
		host, _ := os.Hostname()
		cfg, err = cfg.ForShard(host)
	}
	if sh, ok := cfg.Sharding(); err == nil && ok && sh.Empty() && !lf.emptyShard {
		// run idles and state shows it; the other commands have nothing
		// to check, verify or tap.
		err = &config.KeyError{Key: "shard", Msg: fmt.Sprintf("%s: this command has nothing to do on a shard that owns no tenant (run serves it idle)", sh)}
	}
	if err == nil || isProblems(err) {
		// simulator.settings, checked with the rest, in the same report.
		err = errors.Join(err, app.Validate(cfg))
	}
	if err == nil && !lf.offline && !lf.secretsOptional {
		// Secret and TLS files are read now, so that a missing or empty
		// one is a configuration error naming its key (exit 2), not a
		// failure at the first request.
		err = cfg.CheckFiles()
	}
	return cfg, loaded.Notes, err
}

// signalNotify is cancelled by SIGINT or SIGTERM (tap: stop reading).
func signalNotify() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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

// signalContext is cancelled by the first SIGINT or SIGTERM (a graceful
// stop: drain, flush, commit); a second one exits at once. With reload,
// SIGHUP (its peers' "reload the configuration") sends on the returned
// channel instead (one pending at most: SIGHUPs sent while a reload runs
// make one more), and is ignored once stopping: a reload sent twice must
// not cut the drain short. Without reload (the commands that do not
// run the daemon) SIGHUP stops as SIGTERM does.
func signalContext(log *slog.Logger, reload bool) (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 4)
	reloads := make(chan struct{}, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for stopping := false; ; {
			var s os.Signal
			select {
			case s = <-ch:
			case <-done:
				return
			}
			switch {
			case s == syscall.SIGHUP && stopping:
				log.Info("already stopping gracefully", "signal", s.String())
			case s == syscall.SIGHUP && reload:
				log.Info("reloading the configuration", "signal", s.String())
				select {
				case reloads <- struct{}{}:
				default: // one is pending already
				}
			case stopping:
				log.Error("second signal: exiting without draining", "signal", s.String())
				os.Exit(exitFailed)
			default:
				log.Info("stopping", "signal", s.String())
				stopping = true
				cancel()
			}
		}
	}()
	return ctx, reloads, func() {
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
