package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// buildInfo returns the version, commit and date to print: the ones the
// release build stamped (-ldflags -X), else what the Go toolchain recorded
// in the binary (go build in a git checkout: vcs.revision, vcs.time,
// vcs.modified; go install: the module version).
func buildInfo() (v, c, d string) {
	v, c, d = version, commit, date
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v, c, d
	}
	if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
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
func healthcheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collector healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", defaultAddr(), "the collector's metrics.listen (a wildcard host is asked on 127.0.0.1); default $COLLECTOR_METRICS__LISTEN or 127.0.0.1:9464")
	path := fs.String("path", "/readyz", "the path to GET: /readyz (ready to deliver) or /healthz (alive)")
	timeout := fs.Duration("timeout", 3*time.Second, "deadline of the request")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "collector healthcheck: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
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
// one envelope a line. Exit 0 after --limit envelopes or --timeout, 1 when
// the collector cannot be reached or refuses, 2 on a bad command line.
func tapCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collector tap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", defaultAddr(), "the collector's metrics.listen; default $COLLECTOR_METRICS__LISTEN or 127.0.0.1:9464")
	source := fs.String("source", "", "the source to tap (required): dns, connections, edge_alerts, ...")
	account := fs.String("account", "", "only this sub-account (default: every account)")
	limit := fs.Int("limit", 100, "stop after this many envelopes (at most 100000)")
	timeout := fs.Duration("timeout", 0, "stop after this long even with fewer envelopes (0: wait for --limit)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 || *source == "" {
		fmt.Fprintln(stderr, "collector tap: --source is required, and nothing else: collector tap --source dns [--account A] [--limit N]")
		return exitUsage
	}
	base, err := localURL(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "collector tap: --addr %q: %v\n", *addr, err)
		return exitUsage
	}
	q := url.Values{"source": {*source}, "limit": {strconv.Itoa(*limit)}}
	if *account != "" {
		q.Set("account", *account)
	}
	if *timeout > 0 {
		q.Set("timeout", timeout.String())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/tap?"+q.Encode(), nil)
	if err != nil {
		fmt.Fprintf(stderr, "collector tap: %v\n", err)
		return exitUsage
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "collector tap: the collector at %s cannot be reached: %v\n", base, err)
		return exitFailed
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		fmt.Fprintf(stderr, "collector tap: %s: %s\n", resp.Status, strings.TrimSpace(string(body)))
		return exitFailed
	}
	if _, err := io.Copy(stdout, resp.Body); err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "collector tap: %v\n", err)
		return exitFailed
	}
	return exitOK
}
