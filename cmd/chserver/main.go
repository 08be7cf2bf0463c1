// Command chserver runs a ClickHouse server for tests and demos from the
// engine that ships as libchdb.so (npm package
// @chdb/lib-linux-x64-gnu@26.7.3-stable.1, installed by
// scripts/clickhouse.sh install).
//
// It loads the library without cgo (github.com/ebitengine/purego) and calls
// chdb_query_cmdline with clickhouse-local arguments that start the native
// and HTTP listeners and then run one long, idle query that holds the process
// and the listeners open. The server is clickhouse-local serving: one user
// ("default", no password), no replication, no Keeper. It binds 127.0.0.1
// only. Data under --path survives a restart. SIGTERM or SIGINT stops it.
//
// Usage:
//
//	chserver --lib .cache/chdb/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so \
//	         --path /tmp/ch --tcp-port 19000 --http-port 18123
//
// Build it with CGO_ENABLED=0: it needs no C toolchain.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// listenHost is the only address the server binds: a test server must never
// be reachable from outside the machine.
const listenHost = "127.0.0.1"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "chserver:", err)
		os.Exit(1)
	}
}

type options struct {
	lib      string
	path     string
	tcpPort  int
	httpPort int
	lifetime time.Duration
	logLevel string
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("chserver", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.lib, "lib", os.Getenv("CHDB_LIB"), "path of libchdb.so (default $CHDB_LIB)")
	fs.StringVar(&o.path, "path", "", "data directory (created if missing; kept across restarts)")
	fs.IntVar(&o.tcpPort, "tcp-port", 19000, "native protocol port on 127.0.0.1")
	fs.IntVar(&o.httpPort, "http-port", 18123, "HTTP port on 127.0.0.1")
	fs.DurationVar(&o.lifetime, "lifetime", 30*24*time.Hour, "stop by itself after this long (a safety net for forgotten servers)")
	fs.StringVar(&o.logLevel, "log-level", "warning", "server log level (written to stderr)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.lib == "":
		return o, errors.New("--lib (or $CHDB_LIB) is required: run scripts/clickhouse.sh install")
	case o.path == "":
		return o, errors.New("--path is required")
	case o.tcpPort <= 0 || o.tcpPort > 65535 || o.httpPort <= 0 || o.httpPort > 65535:
		return o, errors.New("--tcp-port and --http-port must be between 1 and 65535")
	case o.tcpPort == o.httpPort:
		return o, errors.New("--tcp-port and --http-port must differ")
	case o.lifetime < time.Second:
		return o, errors.New("--lifetime must be at least 1s")
	}
	return o, nil
}

func run(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.path, 0o755); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	abs, err := filepath.Abs(o.path)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	// The ports must be free: clickhouse-local only logs a failed bind, so a
	// busy port would otherwise give a server that answers nobody (or a
	// test talking to somebody else's server).
	for _, p := range []int{o.tcpPort, o.httpPort} {
		l, err := net.Listen("tcp", net.JoinHostPort(listenHost, strconv.Itoa(p)))
		if err != nil {
			return fmt.Errorf("port %d: %w", p, err)
		}
		_ = l.Close()
	}

	lib, err := purego.Dlopen(o.lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("load %s: %w", o.lib, err)
	}
	if _, err := purego.Dlsym(lib, "chdb_query_cmdline"); err != nil {
		return fmt.Errorf("%s has no chdb_query_cmdline: %w", o.lib, err)
	}
	var queryCmdline func(argc int32, argv unsafe.Pointer) uintptr
	purego.RegisterLibFunc(&queryCmdline, lib, "chdb_query_cmdline")

	secs := int64(o.lifetime / time.Second)
	argv := []string{
		"clickhouse",
		"--path", abs,
		"--listen_host", listenHost,
		"--tcp_port", strconv.Itoa(o.tcpPort),
		"--http_port", strconv.Itoa(o.httpPort),
		"--log-level", o.logLevel,
		"--multiquery",
		"--query=SYSTEM START LISTEN TCP; SYSTEM START LISTEN HTTP; " +
			"SELECT sleepEachRow(1) FROM numbers(" + strconv.FormatInt(secs, 10) + ") FORMAT Null " +
			"SETTINGS function_sleep_max_microseconds_per_block=0, max_block_size=1, max_execution_time=0",
	}
	cargv, free := cStrings(argv)
	defer free()

	done := make(chan uintptr, 1)
	go func() { done <- queryCmdline(int32(len(argv)), cargv) }()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go announce(ctx, o)
	broken := make(chan string, 1)
	go watch(ctx, o, broken)

	select {
	case <-ctx.Done():
		// The engine cannot be asked to stop its query from here, and its
		// parts are on disk once an insert returned: exit now.
		return nil
	case <-done:
		return errors.New("server stopped by itself (see its log above; is --path used by another server?)")
	case answer := <-broken:
		return fmt.Errorf("the engine refuses every query after a fatal error (%s); exiting so that a supervisor can start it again", answer)
	}
}

// watch asks the server SELECT 1 every watchEvery once it answers, and
// sends the answer on broken when the engine says it is shutting down after
// a fatal error (code 236, ABORTED): it has been seen to stay in that state,
// listening but refusing every query, after a native client died in the
// middle of an insert. An exit is what a supervisor can act on.
func watch(ctx context.Context, o options, broken chan<- string) {
	url := "http://" + net.JoinHostPort(listenHost, strconv.Itoa(o.httpPort)) + "/"
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchEvery):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("SELECT 1"))
		resp, err := client.Do(req)
		if err != nil {
			continue // not up yet, or busy: only a clear answer counts
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		if fatalAnswer(resp.StatusCode, body) {
			broken <- strings.TrimSpace(string(body))
			return
		}
	}
}

// watchEvery is how often watch asks.
const watchEvery = time.Second

// fatalAnswer reports whether an HTTP answer to SELECT 1 says the engine
// gave up after a fatal error.
func fatalAnswer(status int, body []byte) bool {
	return status != http.StatusOK && bytes.Contains(body, []byte("Code: 236"))
}

// announce prints one line on stdout when the HTTP port answers, so that a
// script or a test can wait for it.
func announce(ctx context.Context, o options) {
	url := "http://" + net.JoinHostPort(listenHost, strconv.Itoa(o.httpPort)) + "/ping"
	client := &http.Client{Timeout: time.Second}
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Printf("chserver ready native=%s:%d http=%s:%d path=%s pid=%d\n",
					listenHost, o.tcpPort, listenHost, o.httpPort, o.path, os.Getpid())
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}
