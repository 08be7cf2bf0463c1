package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
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
	def := os.Getenv("COLLECTOR_METRICS__LISTEN")
	if def == "" {
		def = "127.0.0.1:9464"
	}
	addr := fs.String("addr", def, "the collector's metrics.listen (a wildcard host is asked on 127.0.0.1); default $COLLECTOR_METRICS__LISTEN or 127.0.0.1:9464")
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
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "collector healthcheck: --addr %q: %v\n", *addr, err)
		return exitUsage
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, port) + *path
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
