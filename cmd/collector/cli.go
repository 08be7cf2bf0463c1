package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/svcexport/collector/internal/app"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/memlimit"
	"github.com/svcexport/collector/internal/status"
	"github.com/svcexport/collector/internal/suggest"
)

// The command line is cobra's (as the OpenTelemetry Collector's, Helm's and
// kubectl's): one definition per command gives its flags, its help, the
// shell completions (collector completion bash|zsh|fish|powershell), the
// did-you-mean for commands and flags, and the reference in docs/cli
// (collector docs). The exit codes stay what they were: 0 done, 1 a
// failure, 2 a bad command line or configuration.

// defaultConfigPath is read when neither --config nor $COLLECTOR_CONFIG
// names a configuration: where the packages and the systemd unit put it.
const defaultConfigPath = "/etc/collector/collector.yaml"

// exitCode ends a command with a status it chose, after it printed what it
// had to say.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// usageError is a bad command line: exit 2, with its message.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func run(args []string, stdout, stderr io.Writer) int {
	// The single-dash spellings the flag package took before cobra.
	if len(args) > 0 {
		switch args[0] {
		case "-version":
			args = append([]string{"version"}, args[1:]...)
		case "-help":
			args = append([]string{"--help"}, args[1:]...)
		}
	}
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	var code exitCode
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &code):
		return int(code)
	default:
		// A bad command line: an unknown command or flag (with what was
		// meant, when something is close), a missing value, an argument
		// where none is taken.
		who := "collector"
		if cmd != nil {
			who = cmd.CommandPath()
		}
		return usage(stderr, who, err)
	}
}

// What every command prints and how it exits, the same for check, verify
// and tap (and healthcheck, state, run): the report on standard output
// (check's ok/FAIL lines, verify's table, tap's envelopes), notes on
// standard error, and when it does not pass, a last line on standard
// error "collector CMD: WHY":
//
//	ok                   exit 0
//	a problem found      exit 1  (check: a FAIL; verify: a gap; tap: refused)
//	cannot reach         exit 1  ("... cannot be reached ...")
//	bad command line     exit 2  ("collector CMD: ..." and "Run 'collector CMD --help' for usage.")
//	bad configuration    exit 2  ("config: KEY: ..." lines)

// usage prints a bad command line's error, as who (the command path,
// "collector tap") says it, and returns exit 2.
func usage(stderr io.Writer, who string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", who, err, who)
	return exitUsage
}

// newRoot builds the command tree. Commands write to stdout and stderr;
// they return nil, an exitCode, or an error for a bad command line.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "collector",
		Short: "Export the platform's activity and audit data into Kafka, ClickHouse or files",
		Long: `collector exports the platform's activity and audit data (nine sources) into
Kafka, ClickHouse, files or stdout, completely, once, and as fresh as the
API's rate budget allows.

Configuration: a YAML file (configs/collector.yaml documents every key), given
with --config (-c), else $COLLECTOR_CONFIG, else ` + defaultConfigPath + `.
Its values may hold ${VAR}, ${VAR:-default}, ${file:PATH} ($${ for a literal
${), then environment variables COLLECTOR_<KEY PATH> with __ between levels,
e.g. COLLECTOR_API__SECRET, COLLECTOR_SINK__KAFKA__BROKERS="[host1:9092, host2:9092]".

Exit codes: 0 done, 1 failure (verify: a gap), 2 bad command line or configuration.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		DisableAutoGenTag: true,
		// No command: the usage on standard error, exit 2, as before.
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(stderr)
			_ = cmd.Usage()
			return exitCode(exitUsage)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	root.SuggestionsMinimumDistance = 2
	root.CompletionOptions.HiddenDefaultCmd = false

	root.AddCommand(
		runCommand(stdout, stderr),
		checkCommand(stdout, stderr),
		stateCommand(stdout, stderr),
		verifyCommand(stdout, stderr),
		healthCommand(stdout, stderr),
		tapCommand(stdout, stderr),
		&cobra.Command{
			Use:   "version",
			Short: "Print the version (the release build's, else the commit go build recorded)",
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				v, c, d := buildInfo()
				fmt.Fprintf(stdout, "collector %s (commit %s, built %s)\n", v, c, d)
				return nil
			},
		},
		docsCommand(),
	)
	return root
}

// flagError adds what was meant to an unknown flag, and makes every flag
// error a usage error (exit 2).
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return usageError{err}
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := closest(name, names); s != "" {
		return usageError{fmt.Errorf("%w\n\nDid you mean this?\n\t--%s\n", err, s)}
	}
	return usageError{err}
}

// closest is the name among names nearest to s: a name s begins (at
// least three letters of it), else the closest within two edits (package
// suggest); "" when none is.
func closest(s string, names []string) string {
	if len(s) >= 3 {
		for _, n := range names {
			if strings.HasPrefix(n, s) {
				return n
			}
		}
	}
	return suggest.Closest(s, names)
}

// configFlag adds --config (-c) to cmd.
func configFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "config", "c", "", "configuration file (YAML); default $COLLECTOR_CONFIG, else "+defaultConfigPath)
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
}

// configPath is the configuration to read: --config, else
// $COLLECTOR_CONFIG, else defaultConfigPath when it exists.
func configPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p := os.Getenv(config.ConfigPathEnv); p != "" {
		return p, nil
	}
	if _, err := os.Stat(defaultConfigPath); err == nil {
		return defaultConfigPath, nil
	}
	return "", usagef("--config is required: none given, $%s is not set and %s does not exist", config.ConfigPathEnv, defaultConfigPath)
}

func runCommand(stdout, stderr io.Writer) *cobra.Command {
	var cfgPath string
	var once, noProgress bool
	var shardSpec string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the daemon",
		Long: `Run the daemon. With --once, exit 0 when every source caught up. On a terminal
with text logs it shows a bar per source (--no-progress: off).

SIGTERM and SIGINT stop it gracefully: the fetched pages are written and the
checkpoint committed; a second SIGTERM or SIGINT exits at once. SIGHUP (and
POST /-/reload with metrics.reload.enabled) reads the configuration again: a
valid one is applied stream by stream without a restart, a bad one is refused
(logged, collector_config_last_reload_successful 0) and the one before runs on.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return exitCode(runWith(cfgPath, "run", stdout, stderr, func(ctx context.Context, cfg config.Config, opts app.Options, bars *status.Bars) error {
				self, _ := os.ReadFile("/proc/self/cgroup") // none off Linux: no limit
				if limit, merr := memlimit.Set("/sys/fs/cgroup", self, os.Getenv); merr != nil {
					opts.Log.Warn("no Go memory limit from the container's", "err", merr)
				} else if limit > 0 {
					opts.Log.Info("Go memory limit set from the container's memory limit (GOMEMLIMIT overrides)", "limit_mib", limit>>20, "share", memlimit.Share)
				}
				err := app.Run(ctx, cfg, opts, once)
				if bars != nil {
					bars.Close() // done already when the run got going; the lines below go straight out
				}
				return err
			}, loadFlags{progress: !noProgress, reload: true, shard: shardSpec, emptyShard: true}))
		},
	}
	configFlag(cmd, &cfgPath)
	cmd.Flags().StringVar(&shardSpec, "shard", "", "run only the tenants shard INDEX/COUNT owns (ordinal/COUNT: INDEX from the host name's StatefulSet ordinal); over the key shard, COLLECTOR_SHARD")
	cmd.Flags().BoolVar(&once, "once", false, "exit 0 once every source has caught up to now - lag (cron-style runs, tests, benchmarks)")
	cmd.Flags().BoolVar(&noProgress, "no-progress", false, "no progress bars on the terminal")
	return cmd
}

func checkCommand(stdout, stderr io.Writer) *cobra.Command {
	var cfgPath string
	var co app.CheckOptions
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate the configuration, then try the API and the sink",
		Long: `Validate and summarise the configuration (--print: all of it), warn of a start
beyond api.max_history, ask for one token, check the sink, and say how many API
requests it spent.

--offline validates only: no secrets needed, no file read, no network (a CI
lint; exit 0 or 2). --print prints the resolved configuration as YAML (it loads
back the same) and its streams.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return exitCode(runWith(cfgPath, "check", stdout, stderr, func(ctx context.Context, cfg config.Config, opts app.Options, _ *status.Bars) error {
				return app.Check(ctx, cfg, opts, co)
			}, loadFlags{offline: co.Offline}))
		},
	}
	configFlag(cmd, &cfgPath)
	cmd.Flags().DurationVar(&co.Timeout, "timeout", 10*time.Second, "deadline of each online step (DNS, connect, TLS, token, sink)")
	cmd.Flags().BoolVar(&co.Offline, "offline", false, "validate only: no secrets required, no file read, no network; exit 0 or 2")
	cmd.Flags().BoolVar(&co.Print, "print", false, "print the resolved configuration (YAML, secrets redacted) and its streams; no network")
	return cmd
}

// countSet counts the values of vs that are set.
func countSet(vs ...string) int {
	n := 0
	for _, v := range vs {
		if v != "" {
			n++
		}
	}
	return n
}

func stateCommand(stdout, stderr io.Writer) *cobra.Command {
	var cfgPath string
	var so app.StateOptions
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Show progress per source and account",
		Long: `Show progress per source and account, from the running collector's /state, else
from the checkpoint (--watch: refresh until interrupted).

--reset SOURCE[/ACCOUNT] forgets the progress of a stream (with tenants, of the
tenant --tenant NAME; the collector must be stopped).

Moving a tenant to another shard (docs/tenants.md, "More collectors"), every
collector stopped: --export-tenant NAME --to FILE writes the tenant's progress
(removes nothing); --import FILE adds it to this checkpoint (refused if it holds
the tenant already, unless --force); --drop-tenant NAME removes it from the old
shard's checkpoint after the import.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			switch {
			case so.Interval <= 0:
				return usagef("--interval must be positive")
			case so.Reset != "" && so.Watch:
				return usagef("--reset and --watch do not go together")
			case so.Tenant != "" && so.Reset == "":
				return usagef("--tenant goes with --reset")
			case (so.ExportTenant != "") != (so.To != ""):
				return usagef("--export-tenant NAME and --to FILE go together")
			case so.Force && so.Import == "":
				return usagef("--force goes with --import")
			case countSet(so.Reset, so.ExportTenant, so.Import, so.DropTenant) > 1:
				return usagef("one of --reset, --export-tenant, --import and --drop-tenant at a time")
			case countSet(so.ExportTenant, so.Import, so.DropTenant) > 0 && so.Watch:
				return usagef("--watch shows the state; it does not go with moving a tenant")
			}
			return exitCode(runWith(cfgPath, "state", stdout, stderr, func(ctx context.Context, cfg config.Config, opts app.Options, _ *status.Bars) error {
				so.Notes = stderr
				so.Terminal = isTerminal(stdout)
				return app.State(ctx, cfg, opts, so)
			}, loadFlags{secretsOptional: true, emptyShard: true}))
		},
	}
	configFlag(cmd, &cfgPath)
	cmd.Flags().StringVar(&so.Reset, "reset", "", "forget the progress of SOURCE or SOURCE/ACCOUNT (the collector must be stopped)")
	cmd.Flags().StringVar(&so.Tenant, "tenant", "", "with --reset and tenants: the tenant whose streams to forget")
	cmd.Flags().StringVar(&so.ExportTenant, "export-tenant", "", "write the progress of tenant NAME to the new file --to (the collector must be stopped)")
	cmd.Flags().StringVar(&so.To, "to", "", "the file --export-tenant writes")
	cmd.Flags().StringVar(&so.Import, "import", "", "add the tenant's progress an --export-tenant wrote to FILE (the collector must be stopped)")
	cmd.Flags().BoolVar(&so.Force, "force", false, "--import replaces the progress the checkpoint holds of the tenant")
	cmd.Flags().StringVar(&so.DropTenant, "drop-tenant", "", "remove the progress of tenant NAME, after its --import on its new shard (the collector must be stopped)")
	cmd.Flags().BoolVar(&so.JSON, "json", false, "print JSON (and nothing else) on standard output")
	cmd.Flags().BoolVar(&so.Watch, "watch", false, "print the state every --interval until interrupted (in place on a terminal)")
	cmd.Flags().DurationVar(&so.Interval, "interval", 2*time.Second, "time between two snapshots of --watch")
	return cmd
}

func verifyCommand(stdout, stderr io.Writer) *cobra.Command {
	var cfgPath, from, to string
	var vo app.VerifyOptions
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Re-count the committed windows at the API and compare with the sink",
		Long: `Re-count the committed windows at the API and compare, per stream and UTC day,
with what the sink delivered; exit 1 on a gap. Prints the requests it will spend
first (the running collector's budget) and asks before it spends them (--yes:
don't ask; --dry-run: plan only). A time is RFC 3339 or YYYY-MM-DD (UTC
midnight). See docs/verify.md.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			var err error
			if vo.From, err = parseFlagTime("from", from); err == nil {
				vo.To, err = parseFlagTime("to", to)
			}
			if err != nil {
				return usageError{err}
			}
			code := exitOK
			c := runWith(cfgPath, "verify", stdout, stderr, func(ctx context.Context, cfg config.Config, opts app.Options, _ *status.Bars) error {
				vo.Notes, vo.Stdin, vo.Interactive = stderr, os.Stdin, status.IsTerminal(os.Stdin)
				c, err := app.Verify(ctx, cfg, opts, vo)
				code = verifyExit(c, err, stderr)
				return nil
			}, loadFlags{secretsOptional: vo.DryRun})
			if c != exitOK {
				return exitCode(c)
			}
			return exitCode(code)
		},
	}
	configFlag(cmd, &cfgPath)
	cmd.Flags().StringVar(&vo.Source, "source", "", "verify only this source")
	cmd.Flags().StringVar(&vo.Account, "account", "", "verify only this account (\"org\": organization-level audit logs; edge streams: edge.account)")
	cmd.Flags().StringVar(&vo.Tenant, "tenant", "", "verify only this tenant, against its own API and key (default: every tenant, each under its name)")
	cmd.Flags().StringVar(&from, "from", "", "verify records from this time on: RFC 3339 or YYYY-MM-DD (default: the stream's start)")
	cmd.Flags().StringVar(&to, "to", "", "verify records before this time: RFC 3339 or YYYY-MM-DD (default and at most: the watermark)")
	cmd.Flags().StringVar(&vo.Sink, "sink", "", "the sink to count in, by name, when several are configured")
	cmd.Flags().BoolVar(&vo.JSON, "json", false, "print JSON (and nothing else) on standard output")
	cmd.Flags().BoolVar(&vo.DryRun, "dry-run", false, "print the plan and its cost in requests; ask nothing of the API")
	cmd.Flags().BoolVar(&vo.Yes, "yes", false, "spend the requests without asking (needed when standard input is not a terminal)")
	return cmd
}

// docsCommand writes the command reference, generated from the same
// definitions as the help: markdown (docs/cli, kept in the repository and
// checked by a test) and, with --man, man pages (the release build).
func docsCommand() *cobra.Command {
	var dir string
	var man bool
	cmd := &cobra.Command{
		Use:    "docs",
		Short:  "Write the command reference as markdown (or man pages with --man) into --dir",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return usagef("--dir is required")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			if man {
				return doc.GenManTree(root, &doc.GenManHeader{Title: "COLLECTOR", Section: "1", Source: "collector"}, dir)
			}
			return doc.GenMarkdownTree(root, dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the directory to write into")
	cmd.Flags().BoolVar(&man, "man", false, "man pages (section 1) instead of markdown")
	return cmd
}

func tapCommand(stdout, stderr io.Writer) *cobra.Command {
	var o tapOptions
	cmd := &cobra.Command{
		Use:   "tap",
		Short: "Print what the running collector delivers of a source, as NDJSON envelopes",
		Long: `Print what the running collector delivers of a source, as NDJSON envelopes, one
a line on standard output (notes on standard error). No API request; a slow
reader loses lines, never slows the collector. The collector is the one at
--config's metrics.listen, --addr or --url. Its /tap is off unless
metrics.tap.enabled, and asks for the token of metrics.tap.token_file
(--token-file, default --config's). See docs/tap.md.

Exit 0 after --limit envelopes, --timeout or an interrupt; 1 when the collector
cannot be reached, refuses or stops first; 2 on a bad command line.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ctx, stop := signalNotify()
			defer stop()
			return exitCode(tapCmd(ctx, &o, stdout, stderr))
		},
	}
	tapFlags(cmd.Flags(), &o)
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
	_ = cmd.MarkFlagFilename("token-file")
	return cmd
}

func healthCommand(stdout, stderr io.Writer) *cobra.Command {
	var o healthOptions
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "GET /readyz of the running collector: exit 0 ready, 1 not (container health checks)",
		Long: `GET /readyz (or --path) of the running collector's telemetry server, for
container health checks (the image has no curl) and helm test: exit 0 when
ready, 1 when not or unreachable, 2 on a bad command line.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return exitCode(healthcheck(&o, stdout, stderr))
		},
	}
	healthFlags(cmd.Flags(), &o)
	return cmd
}
