package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/svcexport/collector/internal/apisim"
)

// options is what the command line selects besides the simulator's Config.
type options struct {
	listen string
	config string
}

// bind registers a flag for every knob of cfg on fs. Repeatable flags
// (--key) replace the configured list on their first use.
func bind(fs *flag.FlagSet, cfg *apisim.Config, o *options) {
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks one)")
	fs.StringVar(&o.config, "config", "", "YAML file with Config keys (snake_case); flags given on the command line override it")

	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the data and the faults")
	fs.Func("accounts", fmt.Sprintf("comma-separated sub-accounts (the edge API serves all of them at once, C6); keys must name one of them as home account (default %q)", strings.Join(cfg.Accounts, ",")), func(s string) error {
		cfg.Accounts = nil
		for _, a := range strings.Split(s, ",") {
			if a = strings.TrimSpace(a); a != "" {
				cfg.Accounts = append(cfg.Accounts, a)
			}
		}
		return nil
	})
	keysSet := false
	fs.Func("key", "API key as key_id:secret:user:role:account, role org_admin|account_admin|account_user; repeat for more keys (replaces the default keys)", func(s string) error {
		p := strings.Split(s, ":")
		if len(p) != 5 {
			return errors.New("want key_id:secret:user:role:account")
		}
		if !keysSet {
			cfg.Keys, keysSet = nil, true
		}
		cfg.Keys = append(cfg.Keys, apisim.KeyConfig{KeyID: p[0], Secret: p[1], User: p[2], Role: p[3], Account: p[4]})
		return nil
	})
	fs.StringVar(&cfg.SecretHeader, "secret-header", cfg.SecretHeader, "header carrying a key's secret on the token endpoint (C1)")
	fs.DurationVar(&cfg.TokenDefaultExpiry, "token-default-expiry", cfg.TokenDefaultExpiry, "token life when the request names no expiryTime (C1)")
	fs.DurationVar(&cfg.TokenMaxExpiry, "token-max-expiry", cfg.TokenMaxExpiry, "largest expiryTime accepted; larger is 400 (C1)")
	fs.StringVar(&cfg.EdgeToken, "edge-token", cfg.EdgeToken, "bearer token of the edge API (C6)")

	fs.Func("rate", "rows per hour of a source as source=N, repeatable (defaults: "+ratesString(cfg.Rates)+")", func(s string) error {
		name, v, err := keyFloat(s)
		if err != nil {
			return err
		}
		if cfg.Rates == nil {
			cfg.Rates = map[string]float64{}
		}
		cfg.Rates[name] = v
		return nil
	})
	fs.Func("account-rate", "rows per hour of a source in one account as account:source=N, repeatable (account org: organization audit logs)", func(s string) error {
		acct, rest, ok := strings.Cut(s, ":")
		if !ok {
			return errors.New("want account:source=N")
		}
		name, v, err := keyFloat(rest)
		if err != nil {
			return err
		}
		if cfg.AccountRates == nil {
			cfg.AccountRates = map[string]map[string]float64{}
		}
		if cfg.AccountRates[acct] == nil {
			cfg.AccountRates[acct] = map[string]float64{}
		}
		cfg.AccountRates[acct][name] = v
		return nil
	})
	fs.Float64Var(&cfg.WaveAmplitude, "wave-amplitude", cfg.WaveAmplitude, "relative amplitude of the daily wave, in [0, 1)")
	fs.Float64Var(&cfg.BurstProbability, "burst-probability", cfg.BurstProbability, "probability that an hour of a stream is a burst")
	fs.Float64Var(&cfg.BurstFactor, "burst-factor", cfg.BurstFactor, "rate multiplier of a burst hour")

	fs.IntVar(&cfg.PageSize, "page-size", cfg.PageSize, "rows per page (C3)")
	fs.IntVar(&cfg.ResultCap, "result-cap", cfg.ResultCap, "rows after which a next-page chain stops (C3); 0: no cap")
	fs.Int64Var(&cfg.TotalRowsCap, "total-rows-cap", cfg.TotalRowsCap, "most totalRows a first page reports; the chain still serves every row (C3: the service may cap the count); 0: the true count")
	fs.DurationVar(&cfg.NextPageTTL, "next-page-ttl", cfg.NextPageTTL, "life of next-page URLs after the first page (C3); 0: forever")
	fs.DurationVar(&cfg.DefaultRange, "default-range", cfg.DefaultRange, "window of a search without timeFilter")
	fs.IntVar(&cfg.FleetAgents, "fleet-agents", cfg.FleetAgents, "agents of each account's fleet, what an agent_info search without timeFilter answers (the inventory); 0: no fleet")
	fs.DurationVar(&cfg.FleetChange, "fleet-change", cfg.FleetChange, "how often, on average, a fleet agent's status, tags, version and lastUpdate change")
	fs.DurationVar(&cfg.MaxRange, "max-range", cfg.MaxRange, "longest search window; longer is 400 (C3); 0: no limit")
	fs.DurationVar(&cfg.MaxHistory, "max-history", cfg.MaxHistory, "how far back a search may start; earlier is 400 (C3); 0: no limit")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", cfg.MaxBodyBytes, "largest POST body; larger is 400 (C5); 0: no limit")
	fs.IntVar(&cfg.RateLimit, "rate-limit", cfg.RateLimit, "tokens per (user, functionality) bucket (C4); 0: no rate limit")
	fs.DurationVar(&cfg.RatePeriod, "rate-period", cfg.RatePeriod, "time in which an empty bucket refills (C4)")
	fs.IntVar(&cfg.EdgeMaxRows, "edge-max-rows", cfg.EdgeMaxRows, "most rows of an edge answer; the rest is dropped (C6); 0: no limit")
	fs.DurationVar(&cfg.AlertUpdateWindow, "alert-update-window", cfg.AlertUpdateWindow, "time after creation in which an edge alert gets its updates (C6)")

	fs.Float64Var(&cfg.ErrorRate, "error-rate", cfg.ErrorRate, "fault: probability of a 500 or 503 on a data request")
	fs.Float64Var(&cfg.NoisyFraction, "noisy-fraction", cfg.NoisyFraction, "fault: fraction of each data bucket's refill a neighbour spends (C4)")
	fs.IntVar(&cfg.RevokeEvery, "revoke-every", cfg.RevokeEvery, "fault: revoke all tokens of a user at every N-th data request (C1); 0: never")
	fs.Float64Var(&cfg.SlowRate, "slow-rate", cfg.SlowRate, "fault: probability that a data response is delayed by slow-delay")
	fs.DurationVar(&cfg.SlowDelay, "slow-delay", cfg.SlowDelay, "fault: delay of a slow response")
	fs.Float64Var(&cfg.CutRate, "cut-rate", cfg.CutRate, "fault: probability that a data response body is cut off mid-JSON (C5)")
	fs.DurationVar(&cfg.LateMax, "late-max", cfg.LateMax, "fault: largest ingestion delay of a record (C3 late data); 0: none")
}

func keyFloat(s string) (string, float64, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", 0, errors.New("want name=N")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", k, err)
	}
	return k, f, nil
}

func ratesString(m map[string]float64) string {
	var parts []string
	for _, k := range []string{apisim.SourceChangedFiles, apisim.SourceConnections, apisim.SourceDNS, apisim.SourceUserLogins,
		apisim.SourceAgentInfo, apisim.SourceAuditLogs, apisim.SourceCloudActivities, apisim.SourceEdgeAuditEvents, apisim.SourceEdgeAlerts} {
		parts = append(parts, fmt.Sprintf("%s=%g", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// parseArgs builds the Config: defaults, then the --config file, then the
// flags given on the command line. It returns flag.ErrHelp for --help.
func parseArgs(args []string, stderr io.Writer) (apisim.Config, options, error) {
	// First pass: find --config (every flag must be known to parse).
	var o options
	scratch := apisim.DefaultConfig()
	fs := flag.NewFlagSet("apisim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bind(fs, &scratch, &o)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "apisim serves the platform's core and edge APIs with synthetic data (CONTRACT C1-C8).\n\nUsage: apisim [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return apisim.Config{}, o, err
	}
	if fs.NArg() > 0 {
		return apisim.Config{}, o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	cfg := apisim.DefaultConfig()
	if o.config != "" {
		b, err := os.ReadFile(o.config)
		if err != nil {
			return apisim.Config{}, o, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return apisim.Config{}, o, fmt.Errorf("config %s: %w", o.config, err)
		}
	}
	// Second pass: flags override the file.
	fs2 := flag.NewFlagSet("apisim", flag.ContinueOnError)
	fs2.SetOutput(io.Discard)
	bind(fs2, &cfg, &o)
	if err := fs2.Parse(args); err != nil {
		return apisim.Config{}, o, err
	}
	return cfg, o, cfg.Validate()
}
