package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
)

// Credentials of the simulator (apisim's defaults). A Collector passes them
// in the environment, as production does, never in the file.
const (
	KeyID     = "sim-key"
	Secret    = "sim-secret"
	EdgeToken = "sim-edge-token"
)

// Omit, as a duration of Config, writes no key: the collector's own default
// applies.
const Omit time.Duration = -1

// Rate is a request budget for api.rate and edge.rate.
type Rate struct {
	Limit  int           // requests per Period; 0 writes no rate
	Period time.Duration // 0 writes none (the collector's default)
}

// Config describes one collector configuration written for a test: what it
// reads from which simulator, and where it delivers. The zero value of each
// field but Sim and Start is the harness's convention, stated per field.
type Config struct {
	// Sim is the simulator the collector reads (core and edge API).
	Sim *apisim.Server
	// Tenants, when set, writes tenants: (one entry per tenant, each
	// reading its own simulator with its own key) instead of the
	// one-tenant api, edge and accounts; Sim is still the one the
	// harness's own comparisons use. Their secrets go in the environment
	// (COLLECTOR_TENANTS__<i>__API__SECRET).
	Tenants []Tenant
	// Dir holds collector.yaml, data/checkpoint.db and out/; New makes a
	// fresh temporary directory when it is empty.
	Dir string

	// Accounts are the accounts collected; nil means Accounts().
	Accounts []string
	// Sources are the enabled sources; nil enables every source
	// (sources.default.enabled stays on).
	Sources []string
	// Start is sources.default.start (written in UTC).
	Start time.Time
	// Lag is sources.default.lag; 0 means 2m.
	Lag time.Duration
	// Interval is sources.default.interval; 0 means 1s, Omit writes none.
	Interval time.Duration
	// Overlap is sources.default.overlap; 0 writes none.
	Overlap time.Duration
	// Recheck is sources.default.recheck as YAML ("[1m, 3m]", "[]" for
	// off); "" writes none (the collector's default).
	Recheck string
	// Inventory is sources.default.inventory (agent_info's inventory
	// walk: "changed", "all"); "" writes off, so that a run's output is
	// the windows' records the simulator's truth counts.
	// InventoryInterval is sources.default.inventory_interval; 0 writes
	// none (the collector's default, 1h).
	Inventory         string
	InventoryInterval time.Duration

	// PageRows is api.page_rows; 0 writes none.
	PageRows int
	// Rate is both api.rate and edge.rate; the zero Rate writes none.
	Rate Rate

	// Sink is the YAML of the sink section, plus any other top-level
	// section it goes with (e.g. pipeline); "" means the file sink into
	// OutDir.
	Sink string
	// OutDir is the file sink's directory when Sink is ""; "" means
	// Dir/out.
	OutDir string
	// NoFsync turns the file sink's fsync off (it is on by default).
	NoFsync bool

	// Metrics is metrics.listen (FreeAddr gives one); "" serves none.
	Metrics string
	// Scrape names gauges RunOnce samples from Metrics every second
	// (Run.Scraped).
	Scrape []string
	// LogLevel is log.level; "" means info. Logs are JSON, progress off.
	LogLevel string

	// Extra is YAML appended to the file; its sections must not repeat
	// the generated ones.
	Extra string
	// Env are more environment variables (KEY=VALUE) for every command,
	// after the credentials: they override the file.
	Env []string
	// Stdout, when set, receives the collector's standard output (what
	// the stdout sink writes) instead of the logs.
	Stdout io.Writer
}

// Collector is one collector configuration written for a test, and the
// commands that run the collector binary on it.
type Collector struct {
	cfg Config
}

// New writes cfg to cfg.Dir/collector.yaml and returns the collector that
// runs on it. Its commands run CollectorBin(tb), built on first use:
// TestMain must use Main.
func New(tb testing.TB, cfg Config) *Collector {
	tb.Helper()
	if cfg.Sim == nil {
		tb.Fatal("harness.New: Config.Sim is nil")
	}
	if cfg.Dir == "" {
		cfg.Dir = tb.TempDir()
	}
	if cfg.Accounts == nil {
		cfg.Accounts = Accounts()
	}
	c := &Collector{cfg: cfg}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(c.ConfigPath(), []byte(c.yaml()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return c
}

// yaml is the configuration file.
func (c *Collector) yaml() string {
	cfg := c.cfg
	var b strings.Builder
	rate := ""
	if cfg.Rate.Limit > 0 {
		rate = fmt.Sprintf("  rate:\n    limit: %d\n", cfg.Rate.Limit)
		if cfg.Rate.Period > 0 {
			rate += fmt.Sprintf("    period: %s\n", cfg.Rate.Period)
		}
	}
	if len(cfg.Tenants) > 0 {
		b.WriteString(tenantsYAML(cfg, rate))
	} else {
		fmt.Fprintf(&b, "api:\n  base_url: %s\n  key_id: %s\n", cfg.Sim.URL(), KeyID)
		if cfg.PageRows > 0 {
			fmt.Fprintf(&b, "  page_rows: %d\n", cfg.PageRows)
		}
		b.WriteString(rate)
		fmt.Fprintf(&b, "edge:\n  base_url: %s\n%s", cfg.Sim.EdgeURL(), rate)
		fmt.Fprintf(&b, "accounts: [%s]\n", strings.Join(cfg.Accounts, ", "))
	}
	fmt.Fprintf(&b, "checkpoint:\n  path: %s\n", c.CheckpointPath())
	level := cfg.LogLevel
	if level == "" {
		level = "info"
	}
	fmt.Fprintf(&b, "log:\n  format: json\n  level: %s\n  progress: 0s\n", level)
	fmt.Fprintf(&b, "metrics:\n  listen: %q\n", cfg.Metrics)

	b.WriteString("sources:\n  default:\n")
	if cfg.Sources != nil {
		b.WriteString("    enabled: false\n")
	}
	fmt.Fprintf(&b, "    start: %s\n", cfg.Start.UTC().Format(time.RFC3339))
	duration := func(key string, d, zero time.Duration) {
		if d == 0 {
			d = zero
		}
		if d > 0 {
			fmt.Fprintf(&b, "    %s: %s\n", key, d)
		}
	}
	duration("lag", cfg.Lag, 2*time.Minute)
	duration("overlap", cfg.Overlap, 0)
	duration("interval", cfg.Interval, time.Second)
	if cfg.Recheck != "" {
		fmt.Fprintf(&b, "    recheck: %s\n", cfg.Recheck)
	}
	inv := cfg.Inventory
	if inv == "" {
		inv = "off"
	}
	fmt.Fprintf(&b, "    inventory: %s\n", inv)
	duration("inventory_interval", cfg.InventoryInterval, 0)
	for _, s := range cfg.Sources {
		fmt.Fprintf(&b, "  %s: {enabled: true}\n", s)
	}

	if cfg.Sink != "" {
		b.WriteString(cfg.Sink)
	} else {
		fmt.Fprintf(&b, "sink:\n  type: file\n  file:\n    dir: %s\n", c.OutDir())
		if cfg.NoFsync {
			b.WriteString("    fsync: false\n")
		}
	}
	b.WriteString(cfg.Extra)
	return b.String()
}

// Config returns the configuration c was written from (Dir and Accounts
// filled in).
func (c *Collector) Config() Config { return c.cfg }

// ConfigPath is the configuration file.
func (c *Collector) ConfigPath() string { return filepath.Join(c.cfg.Dir, "collector.yaml") }

// CheckpointPath is the checkpoint file.
func (c *Collector) CheckpointPath() string { return filepath.Join(c.cfg.Dir, "data", "checkpoint.db") }

// OutDir is the file sink's directory (when Config.Sink is "").
func (c *Collector) OutDir() string {
	if c.cfg.OutDir != "" {
		return c.cfg.OutDir
	}
	return filepath.Join(c.cfg.Dir, "out")
}

// Environ is the environment of the collector's commands: this process's,
// the credentials, Config.Env and then extra.
func (c *Collector) Environ(extra ...string) []string {
	env := append(os.Environ(), "COLLECTOR_API__SECRET="+Secret, "COLLECTOR_EDGE__TOKEN="+EdgeToken)
	if len(c.cfg.Tenants) > 0 {
		env = append(os.Environ(), tenantsEnv(c.cfg.Tenants)...)
	}
	env = append(env, c.cfg.Env...)
	return append(env, extra...)
}

// command returns the collector command for args, with --config appended
// and the environment of Environ, the binary built (on first use) for tb.
// Its output is not connected.
func (c *Collector) command(ctx context.Context, tb testing.TB, args ...string) *exec.Cmd {
	tb.Helper()
	args = append(args, "--config", c.ConfigPath())
	cmd := exec.CommandContext(ctx, CollectorBin(tb), args...)
	cmd.Env = c.Environ()
	return cmd
}

// CLI runs the collector with args and --config (e.g. "state", "--reset",
// "dns/acme"), the environment of Environ(env...), to its end within a
// minute, and returns its exit code and output (stdout and stderr
// together).
func (c *Collector) CLI(tb testing.TB, env []string, args ...string) (int, string) {
	tb.Helper()
	return run(tb, CollectorBin(tb), c.Environ(env...), append(args, "--config", c.ConfigPath())...)
}

// RunCLI runs the collector binary with args, this process's environment
// plus env, to its end within a minute, and returns its exit code and output
// (stdout and stderr together). For commands without a Collector: bad
// configurations, flags.
func RunCLI(tb testing.TB, env []string, args ...string) (int, string) {
	tb.Helper()
	return run(tb, CollectorBin(tb), append(os.Environ(), env...), args...)
}

func run(tb testing.TB, bin string, env []string, args ...string) (int, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return exitCode(tb, cmd.Run(), args), out.String()
}

// exitCode is the exit status of a command with args that ended with err
// (the error of its Run or Wait): 0 for nil, its code for an exit error;
// anything else (it could not start) fails tb.
func exitCode(tb testing.TB, err error, args []string) int {
	tb.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	tb.Fatalf("run collector %v: %v", args, err)
	return -1
}
