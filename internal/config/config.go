package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/pipeline"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/file"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/stdout"
	"github.com/svcexport/collector/internal/source/catalog"
)

// Config is the whole configuration of the collector. Every section is
// owned by the package that uses it; see configs/collector.yaml for every
// key with its comment and default.
type Config struct {
	API          api.Config            `koanf:"api"`
	Accounts     []string              `koanf:"accounts"`
	OrgAuditLogs bool                  `koanf:"org_audit_logs"`
	Edge         catalog.EdgeConfig    `koanf:"edge"`
	Sources      catalog.SourcesConfig `koanf:"sources"`
	// Tenants are many platform tenants in one process (tenants.go);
	// empty for the one-tenant form of API, Accounts, OrgAuditLogs and Edge.
	Tenants TenantList `koanf:"tenants"`
	// Shard spreads Tenants over several collectors: "INDEX/COUNT" or
	// "ordinal/COUNT" (package shard); "" runs them all. ForShard applies
	// it.
	Shard      string           `koanf:"shard"`
	Checkpoint CheckpointConfig `koanf:"checkpoint"`
	Pipeline   pipeline.Config  `koanf:"pipeline"`
	Sink       SinkConfig       `koanf:"sink"`
	SinkList   SinkList         `koanf:"sinks"`
	Metrics    MetricsConfig    `koanf:"metrics"`
	Log        LogConfig        `koanf:"log"`
	Simulator  SimulatorConfig  `koanf:"simulator"`

	// sharding is what ForShard chose; nil before it, or unsharded.
	sharding *Sharding
}

// CheckpointConfig locates the checkpoint file (key "checkpoint").
type CheckpointConfig struct {
	// Path of the bbolt file; its directory also holds dead letters.
	// Default "./data/checkpoint.db".
	Path string `koanf:"path"`
	// OpenTimeout is how long to wait for the file lock held by another
	// collector before giving up. Default 1s.
	OpenTimeout time.Duration `koanf:"open_timeout"`
}

// SinkConfig selects and configures one sink: the one-sink section (key
// "sink") or an entry of the list "sinks" (SinkList). Config.Sinks returns
// the sinks a configuration has; sinks.go holds their rules.
type SinkConfig struct {
	// Name names the sink in metrics (the sink label), /readyz (sink:NAME),
	// state, logs and its dead-letter file: a-z, 0-9, _ and -, unique.
	// Default: its type.
	Name string `koanf:"name"`
	// Type is file (default), stdout, kafka or clickhouse.
	Type       string            `koanf:"type"`
	File       file.Config       `koanf:"file"`
	Stdout     stdout.Config     `koanf:"stdout"`
	Kafka      kafka.Config      `koanf:"kafka"`
	ClickHouse clickhouse.Config `koanf:"clickhouse"`

	key       string // key path of the block (Key)
	set       bool   // the block was in the file or the environment
	typed     bool   // ... with its type
	decodeErr error  // what UnmarshalMapstructure found, keys relative to the block
}

// Sink types.
const (
	SinkFile       = "file"
	SinkStdout     = "stdout"
	SinkKafka      = "kafka"
	SinkClickHouse = "clickhouse"
)

// MetricsConfig places the telemetry server (key "metrics").
type MetricsConfig struct {
	// Listen is host:port of /metrics, /healthz, /readyz and /state.
	// Default 127.0.0.1:9464; "" turns the server off.
	Listen string `koanf:"listen"`
	// FailingAfter is how long a stream's polls may fail without a commit
	// before /readyz names it under streams_failing (never less than three
	// of its polling intervals). Default 10m; at least 1s.
	FailingAfter time.Duration `koanf:"failing_after"`
	// Pprof serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on Listen, to find where memory or CPU goes. Default
	// false: a profile shows the process's internals to whoever can reach
	// the port.
	Pprof bool `koanf:"pprof"`
	// Tap turns on /tap, what `collector tap` reads: every record the
	// collector delivers, live. Off by default.
	Tap TapConfig `koanf:"tap"`
	// Reload turns on POST /-/reload, which reloads the configuration as
	// SIGHUP does. Off by default.
	Reload ReloadConfig `koanf:"reload"`
}

// ReloadConfig places POST /-/reload (key "metrics.reload"), the
// Prometheus convention for "read the configuration again" (SIGHUP does
// the same, always). It changes what the collector does, so it is not
// served unless Enabled; with TokenFile set a request must send its
// bearer token (Authorization: Bearer TOKEN), as a tap does.
type ReloadConfig struct {
	// Enabled serves POST /-/reload on metrics.listen. Default false.
	Enabled bool `koanf:"enabled"`
	// TokenFile holds the bearer token a reload request must send, at
	// least 16 characters, re-read at every request. "" asks for none,
	// which only a loopback metrics.listen allows (Validate), as for /tap.
	TokenFile string `koanf:"token_file"`
}

// TapConfig places /tap (key "metrics.tap"). Records are data (logins,
// audit logs, DNS, connections): /tap is off unless Enabled, and a tap
// must then send the bearer token of TokenFile. With no TokenFile it is
// allowed only on a loopback metrics.listen (Validate), where only the
// host's processes reach it, as `vector tap`'s API.
type TapConfig struct {
	// Enabled serves /tap on metrics.listen. Default false.
	Enabled bool `koanf:"enabled"`
	// TokenFile holds the bearer token a tap must send (Authorization:
	// Bearer TOKEN; collector tap --token-file), at least tap.MinToken
	// characters; re-read at every tap, so a rotated token applies at
	// once. Required when Enabled and metrics.listen is not loopback.
	TokenFile string `koanf:"token_file"`
}

// LogConfig shapes the logs (key "log").
type LogConfig struct {
	// Level is debug, info (default), warn or error.
	Level string `koanf:"level"`
	// Format is text (default) or json.
	Format string `koanf:"format"`
	// Progress is how often a progress line is logged; 0 turns it off.
	// Default 30s.
	Progress time.Duration `koanf:"progress"`
}

// SimulatorConfig runs the project's API simulator inside the collector, for
// the demo and tests (key "simulator"). When enabled, api.base_url,
// edge.base_url and the credentials default to the simulator's. The
// application starts it and checks its settings; this package only loads
// the keys.
type SimulatorConfig struct {
	Enabled bool `koanf:"enabled"`
	// Listen is the simulator's address. Default 127.0.0.1:0 (a free port).
	Listen string `koanf:"listen"`
	// Settings are the simulator's own keys (see apisim.Config and
	// `apisim --help`): rates, limits, faults.
	Settings map[string]any `koanf:"settings"`
}

// Default returns the configuration before any file or environment.
func Default() Config {
	src := catalog.DefaultConfig()
	return Config{
		API:        src.API,
		Edge:       src.Edge,
		Sources:    src.Sources,
		Checkpoint: CheckpointConfig{Path: filepath.Join("data", "checkpoint.db"), OpenTimeout: time.Second},
		Pipeline:   pipeline.DefaultConfig(),
		Sink:       DefaultSink(),
		Metrics:    MetricsConfig{Listen: "127.0.0.1:9464", FailingAfter: 10 * time.Minute},
		Log:        LogConfig{Level: "info", Format: "text", Progress: 30 * time.Second},
		Simulator:  SimulatorConfig{Listen: "127.0.0.1:0"},
	}
}

// Load returns the configuration of the file at path (may be empty: defaults
// only) with environ (KEY=VALUE, usually os.Environ()) applied on top, and
// validated. Every error names the key; see LoadWith.
func Load(path string, environ []string) (Config, error) {
	l, err := LoadWith(path, environ, LoadOptions{})
	if err != nil {
		return Config{}, err
	}
	return l.Config, nil
}

// SourceConfig returns the part of the configuration the pollers use.
func (c Config) SourceConfig() catalog.Config {
	return catalog.Config{API: c.API, Accounts: c.Accounts, OrgAuditLogs: c.OrgAuditLogs, Edge: c.Edge, Sources: c.Sources}
}

// Validate checks every section; each message names its key.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.validateSource())
	errs = append(errs, c.validateTenants()...)
	errs = append(errs, c.validateSinks()...)
	errs = append(errs, c.Pipeline.Validate())
	if c.Checkpoint.Path == "" {
		errs = append(errs, &KeyError{Key: "checkpoint.path", Msg: "must be set"})
	}
	if c.Checkpoint.OpenTimeout <= 0 {
		errs = append(errs, &KeyError{Key: "checkpoint.open_timeout", Msg: "must be positive"})
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, &KeyError{Key: "log.level", Msg: fmt.Sprintf("unknown level %q (debug, info, warn, error)", c.Log.Level)})
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		errs = append(errs, &KeyError{Key: "log.format", Msg: fmt.Sprintf("unknown format %q (text, json)", c.Log.Format)})
	}
	if err := checkListen(c.Metrics.Listen); err != nil {
		errs = append(errs, &KeyError{Key: "metrics.listen", Msg: err.Error()})
	}
	errs = append(errs, c.validateTap()...)
	errs = append(errs, c.validateReload()...)
	if c.Metrics.FailingAfter < time.Second {
		errs = append(errs, &KeyError{Key: "metrics.failing_after", Msg: fmt.Sprintf("must be at least 1s, got %s", c.Metrics.FailingAfter)})
	}
	errs = append(errs, c.validatePlanners()...)
	if c.Log.Progress < 0 {
		errs = append(errs, &KeyError{Key: "log.progress", Msg: "must not be negative"})
	}
	return errors.Join(errs...)
}

// checkListen checks a host:port listen address; "" is off.
func checkListen(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:9464 or :9464)", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// validateTap refuses a /tap anyone who reaches the port could read, and
// validateGuarded a POST /-/reload anyone who reaches it could send: on,
// with no token, on an address other than loopback (a wildcard, a
// routable address or a name that may resolve to one). An error rather
// than a warning: the records are the platform's users' data, and a
// reload makes the collector read its files again and restart streams at
// a stranger's will; a configuration that opens either to the whole
// network must not start by default. A token file (or a loopback
// metrics.listen) is one line away.
func (c Config) validateTap() []error {
	return c.validateGuarded("metrics.tap", c.Metrics.Tap.Enabled, c.Metrics.Tap.TokenFile,
		"/tap is served by the telemetry server, which metrics.listen \"\" turns off",
		"/tap would hand every record to whoever reaches the port")
}

func (c Config) validateReload() []error {
	return c.validateGuarded("metrics.reload", c.Metrics.Reload.Enabled, c.Metrics.Reload.TokenFile,
		"POST /-/reload is served by the telemetry server, which metrics.listen \"\" turns off (SIGHUP reloads without it)",
		"whoever reaches the port could make the collector reload and restart its streams")
}

// validateGuarded is the one rule of the telemetry server's guarded
// endpoints (key: metrics.tap or metrics.reload): off, or on a served
// metrics.listen, with a token file unless that address is loopback.
func (c Config) validateGuarded(key string, enabled bool, tokenFile, needsListen, exposed string) []error {
	switch {
	case !enabled:
		return nil
	case c.Metrics.Listen == "":
		return []error{&KeyError{Key: key + ".enabled", Msg: "needs metrics.listen: " + needsListen}}
	case tokenFile == "" && !IsLoopback(c.Metrics.Listen):
		return []error{&KeyError{Key: key + ".token_file", Msg: fmt.Sprintf("must be set when %s.enabled and metrics.listen %q is not a loopback address: "+
			"%s (set a token file, e.g. from `openssl rand -hex 32`, or listen on 127.0.0.1)", key, c.Metrics.Listen, exposed)}}
	}
	return nil
}

// IsLoopback reports whether the listen address addr (host:port) serves
// only the host itself: a loopback IP (127.0.0.0/8, ::1) or "localhost".
// A wildcard host ("", 0.0.0.0, ::) or any other name is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validatePlanners checks each enabled source's window settings the way its
// poller will use them (an overlap as long as the window would never
// advance), naming the block that set the value.
func (c Config) validatePlanners() []error {
	var errs []error
	for _, spec := range catalog.Specs() {
		var err error
		for _, sc := range c.SourceConfigs() {
			st := sc.Sources.Resolve(spec.Name)
			if !st.Enabled {
				continue
			}
			if err = catalog.NewPlanner(spec, st, sc.API, sc.Edge).Validate(); err != nil {
				break
			}
		}
		if err == nil {
			continue
		}
		for _, e := range splitJoined(err) {
			field, msg, ok := strings.Cut(e.Error(), ": ")
			if !ok {
				field, msg = "", e.Error()
			}
			block := spec.Name
			if _, set := c.Sources[spec.Name]; !set {
				block = catalog.DefaultSourcesKey
			}
			key := "sources." + block
			if field != "" {
				key += "." + field
			}
			errs = append(errs, &KeyError{Key: key, Msg: msg})
		}
		if len(errs) > 0 {
			break // one report per bad value, not one per source
		}
	}
	return errs
}

// splitJoined returns the errors an errors.Join holds, or err alone.
func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// validateSource validates the pollers' part, as PlannedSourceConfig
// returns it. The simulator's own settings (simulator.settings) are the
// application's to check.
func (c Config) validateSource() error {
	if len(c.Tenants) > 0 {
		var errs []error
		for i := range c.Tenants {
			errs = append(errs, c.validateTenantSource(i)...)
		}
		return errors.Join(errs...)
	}
	return c.PlannedSourceConfig().Validate()
}

// PlannedSourceConfig is SourceConfig for what needs the streams but no
// running API: validation, and the commands that list streams (state,
// reset). With the simulator on, the application fills the API locations
// and credentials the configuration leaves unset from the simulator it
// starts (SimulatorSourceConfig), so they may be missing here: an address
// nothing listens on takes their place, which turns the edge streams on as
// the simulator does. Nothing connects to it.
func (c Config) PlannedSourceConfig() catalog.Config {
	if c.Simulator.Enabled {
		return c.SimulatorSourceConfig("http://127.0.0.1:1")
	}
	return c.SourceConfig()
}

// The in-process simulator's credentials (its defaults: apisim's
// DefaultConfig), which the pollers use while the configuration names
// none.
const (
	simulatorKeyID     = "sim-key"
	simulatorSecret    = "sim-secret"
	simulatorEdgeToken = "sim-edge-token"
)

// SimulatorSourceConfig is SourceConfig with what the configuration leaves
// unset of the API's locations and credentials taken from an in-process
// simulator serving at base (the edge API under base/edge): the one place
// the demo's simulator rewrites the configuration.
func (c Config) SimulatorSourceConfig(base string) catalog.Config {
	return catalog.Endpoints{BaseURL: base, EdgeURL: base + "/edge", KeyID: simulatorKeyID, Secret: simulatorSecret,
		EdgeToken: simulatorEdgeToken}.Fill(c.SourceConfig())
}

// Dump writes the effective configuration as YAML with every secret
// redacted, in the order of configs/collector.yaml. It loads back (with the
// secrets supplied again) as the same configuration: what is unset is
// left out, durations print with units.
func (c Config) Dump() ([]byte, error) {
	m, err := toMap(c)
	if err != nil {
		return nil, err
	}
	if len(c.Tenants) > 0 {
		// The one-tenant form's sections hold their defaults only, and
		// would not load back with tenants.
		m.drop(oneTenantKeys...)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Environ returns os.Environ; a seam for tests.
func Environ() []string { return os.Environ() }
