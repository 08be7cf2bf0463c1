package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/svcexport/collector"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/tap"
)

// buildInfo returns the version, commit and date to print: the ones the
// release build stamped (-ldflags -X), else what the Go toolchain recorded
// in the binary (go build in a git checkout: vcs.revision, vcs.time,
// vcs.modified; go install: the module version). A version neither stamped
// nor recorded (go run, go build, a Docker build without VERSION) is the
// repository's VERSION file with "-dev": the release it leads to, so that
// no build says only "dev".
func buildInfo() (v, c, d string) {
	v, c, d = version, commit, date
	bi, ok := debug.ReadBuildInfo()
	if v == "" && ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if v == "" {
		v = collector.Version() + "-dev"
	}
	if !ok {
		return v, c, d
	}
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if c == "unknown" {
				c = s.Value
			}
		case "vcs.time":
			if d == "unknown" {
				d = s.Value
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && commit == "unknown" && c != "unknown" {
		c += "-dirty"
	}
	return v, c, d
}

// healthcheck is "collector healthcheck": a GET of /readyz on the
// running collector's metrics address, for container health checks
// (distroless images have no curl). Exit 0 when ready, 1 when not or
// unreachable, 2 on a bad command line.
// healthOptions are the flags of healthcheck.
type healthOptions struct {
	addr, path string
	timeout    time.Duration
}

// healthFlags registers the flags of healthcheck on fs.
func healthFlags(fs *pflag.FlagSet, o *healthOptions) {
	fs.StringVar(&o.addr, "addr", defaultAddr(), "the collector's metrics.listen, or HOST:PORT of another pod (a wildcard host is asked on 127.0.0.1); default $COLLECTOR_METRICS__LISTEN or 127.0.0.1:9464")
	fs.StringVar(&o.path, "path", "/readyz", "the path to GET: /readyz (ready to deliver) or /healthz (alive)")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Second, "deadline of the request")
}

func healthcheck(o *healthOptions, stdout, stderr io.Writer) int {
	addr, path, timeout := &o.addr, &o.path, &o.timeout
	base, err := localURL(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "collector healthcheck: --addr %q: %v\n", *addr, err)
		return exitUsage
	}
	url := base + *path
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "collector healthcheck: %v\n", err)
		return exitUsage
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stdout, "not ready: %s: %v\n", url, err)
		return exitFailed
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	line := strings.Join(strings.Fields(string(body)), " ")
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stdout, "not ready: %s: %s %s\n", url, resp.Status, line)
		return exitFailed
	}
	fmt.Fprintf(stdout, "ready: %s\n", url)
	return exitOK
}

// defaultAddr is the running collector's metrics address as the
// environment says it, else the default metrics.listen.
func defaultAddr() string {
	if a := os.Getenv("COLLECTOR_METRICS__LISTEN"); a != "" {
		return a
	}
	return "127.0.0.1:9464"
}

// localURL is the base URL of the telemetry server listening on addr: a
// wildcard host is asked on 127.0.0.1.
func localURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// tapCmd is "collector tap": the envelopes the running collector delivers
// of one source (and account), read from its /tap endpoint (package tap):
// no request to the API, nothing taken from the sinks. NDJSON on stdout,
// one envelope a line, nothing else; notes on stderr. The collector is
// found by --url, --addr, or the metrics.listen of --config (as `state`
// finds it); the bearer token /tap asks for is read from --token-file, else
// from the file of metrics.tap.token_file (--config's, or
// $COLLECTOR_METRICS__TAP__TOKEN_FILE). Exit 0 after --limit envelopes,
// --timeout or an interrupt; 1 when the collector cannot be reached,
// refuses (the tap off, no or a wrong token, a source or account it does
// not collect) or stops first; 2 on a bad command line or configuration.
// tapOptions are the flags of tap.
type tapOptions struct {
	req                              tap.Request
	cfgPath, addr, rawURL, tokenFile string
}

// tapFlags registers the flags of tap on fs.
func tapFlags(fs *pflag.FlagSet, o *tapOptions) {
	fs.StringVar(&o.req.Source, "source", "", "the source to tap (required): dns, connections, edge_alerts, ...")
	fs.StringVar(&o.req.Account, "account", "", "only this sub-account (default: every account)")
	fs.StringVar(&o.req.Tenant, "tenant", "", "only this tenant of a collector with tenants (default: every tenant, each line naming its own)")
	fs.IntVar(&o.req.Limit, "limit", tap.DefaultLimit, fmt.Sprintf("stop after this many envelopes (1 to %d)", tap.MaxLimit))
	fs.Float64Var(&o.req.Sample, "sample", 1, "the share of the envelopes to print, evenly spread, in (0, 1]: 0.01 prints one in a hundred")
	fs.DurationVar(&o.req.Timeout, "timeout", 0, "stop after this long even with fewer envelopes (0: wait for --limit)")
	fs.StringVarP(&o.cfgPath, "config", "c", "", "the collector's configuration file: tap the collector at its metrics.listen")
	fs.StringVar(&o.addr, "addr", "", "the collector's metrics.listen, HOST:PORT (a wildcard host is asked on 127.0.0.1); default $COLLECTOR_METRICS__LISTEN or 127.0.0.1:9464")
	fs.StringVar(&o.rawURL, "url", "", "the collector's telemetry server as a URL, e.g. http://127.0.0.1:9464")
	fs.StringVar(&o.tokenFile, "token-file", "", "the file holding the bearer token /tap asks for (the collector's metrics.tap.token_file); default: --config's metrics.tap.token_file, else $COLLECTOR_METRICS__TAP__TOKEN_FILE")
}

func tapCmd(ctx context.Context, o *tapOptions, stdout, stderr io.Writer) int {
	req := o.req
	cfgPath, addr, rawURL, tokenFile := &o.cfgPath, &o.addr, &o.rawURL, &o.tokenFile
	const who = "collector tap"
	switch {
	case req.Source == "":
		return usage(stderr, who, errors.New("--source is required: collector tap --source dns [--account A] [--tenant T] [--limit N] [--config FILE]"))
	case req.Limit < 1:
		return usage(stderr, who, fmt.Errorf("--limit %d: want 1 to %d", req.Limit, tap.MaxLimit))
	case !(req.Sample > 0):
		return usage(stderr, who, fmt.Errorf("--sample %v: want a share in (0, 1]", req.Sample))
	case req.Timeout < 0:
		return usage(stderr, who, fmt.Errorf("--timeout %s: want a positive duration", req.Timeout))
	}
	if err := req.Validate(); err != nil {
		return usage(stderr, who, err)
	}
	set := 0
	for _, v := range []string{*cfgPath, *addr, *rawURL} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return usage(stderr, who, errors.New("give one of --config, --addr and --url"))
	}
	var base string
	switch {
	case *rawURL != "":
		u, err := url.Parse(*rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usage(stderr, who, fmt.Errorf("--url %q: want http://HOST:PORT", *rawURL))
		}
		base = strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/")
	case *cfgPath != "":
		// The configuration `state` reads: the file, then COLLECTOR_*
		// variables; secrets are not needed to find an address.
		loaded, err := config.LoadWith(*cfgPath, os.Environ(), config.LoadOptions{SecretsOptional: true})
		if err != nil {
			for _, line := range config.Lines(err, maxProblems) {
				fmt.Fprintf(stderr, "config: %s\n", line)
			}
			return exitUsage
		}
		listen := loaded.Config.Metrics.Listen
		if *tokenFile == "" {
			*tokenFile = loaded.Config.Metrics.Tap.TokenFile
		}
		if listen == "" {
			fmt.Fprintf(stderr, "collector tap: %s sets no metrics.listen: that collector serves no tap\n", *cfgPath)
			return exitUsage
		}
		if base, err = localURL(listen); err != nil {
			fmt.Fprintf(stderr, "collector tap: metrics.listen %q: %v\n", listen, err)
			return exitUsage
		}
	default:
		a := *addr
		if a == "" {
			a = defaultAddr()
		}
		var err error
		if base, err = localURL(a); err != nil {
			return usage(stderr, who, fmt.Errorf("--addr %q: %w", a, err))
		}
	}
	if *tokenFile == "" {
		*tokenFile = os.Getenv("COLLECTOR_METRICS__TAP__TOKEN_FILE")
	}
	var token secret.Secret
	if *tokenFile != "" {
		var err error
		if token, err = tap.ReadToken(*tokenFile); err != nil {
			fmt.Fprintf(stderr, "collector tap: --token-file: %v\n", err)
			return exitUsage
		}
	}
	// Unbuffered: a reader of a pipe sees each envelope as it comes.
	res, err := tap.Read(ctx, nil, base, token, req, stdout)
	if res.Dropped > 0 {
		fmt.Fprintf(stderr, "collector tap: %d envelopes dropped: this tap read slower than the collector delivered (the collector never waits for a tap)\n", res.Dropped)
	}
	if err != nil {
		fmt.Fprintf(stderr, "collector tap: %v\n", err)
		return exitFailed
	}
	if res.End == tap.EndTimeout && res.Envelopes < req.Limit {
		fmt.Fprintf(stderr, "collector tap: --timeout %s passed after %d of %d envelopes\n", req.Timeout, res.Envelopes, req.Limit)
	}
	return exitOK
}
