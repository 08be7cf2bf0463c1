// Package chtest gives tests a real ClickHouse server (26.x) to talk to over
// the native and the HTTP protocol.
//
// Where the server comes from, in order:
//
//  1. CHTEST_CLICKHOUSE_NATIVE and CHTEST_CLICKHOUSE_HTTP
//     (host:port each, both set): a server somebody started, e.g. CI with
//     "scripts/clickhouse.sh start" and "eval $(scripts/clickhouse.sh env)".
//  2. Otherwise a private server for the test binary's lifetime, started
//     with the launcher cmd/chserver (built on first use with CGO_ENABLED=0)
//     and the engine library libchdb.so, found through CHDB_LIB or in the
//     repository's .cache/chdb (put there by "scripts/clickhouse.sh
//     install").
//
// When neither is possible the test fails (never skips), saying to run
// scripts/clickhouse.sh install.
//
// Every test gets a fresh database (NewDatabase), dropped at its end. Tests
// that kill and restart a server get their own with Start.
//
// Use it from TestMain so that the shared server stops before the leak
// check:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(chtest.Main(m)) }
package chtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables read by this package.
const (
	EnvNative = "CHTEST_CLICKHOUSE_NATIVE"
	EnvHTTP   = "CHTEST_CLICKHOUSE_HTTP"
	EnvLib    = "CHDB_LIB"
)

// libRel is where scripts/clickhouse.sh install puts the library, relative
// to the repository root.
const libRel = ".cache/chdb/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so"

const installHint = "no ClickHouse for tests: run scripts/clickhouse.sh install " +
	"(or set " + EnvNative + " and " + EnvHTTP + " to a running server, or " + EnvLib + " to libchdb.so)"

// Server is a ClickHouse server that tests can reach.
type Server struct {
	// Native and HTTP are the host:port of the two protocols.
	Native string
	HTTP   string

	// Set for servers this package started.
	bin, lib, dir string
	tcpPort       int
	httpPort      int
	mu            sync.Mutex
	cmd           *exec.Cmd
	exited        chan struct{}
	up            bool // cmd answered: its exit from now on is a crash unless cmd was cleared
	held          bool // stopped or killed on purpose (until Restart): no restart, no waiting in query
	restarts      int
	log           string
	client        *http.Client
}

// shared is the state of the test binary (test helper state: one server
// and one launcher binary per process by design).
var shared struct {
	sync.Mutex
	srv    *Server
	err    error
	binDir string
}

// Main wraps m so that the shared server stops after the tests ran (and
// before goleak looks for leaked goroutines).
func Main(m *testing.M) interface{ Run() int } { return mainWrapper{m} }

type mainWrapper struct{ m *testing.M }

func (w mainWrapper) Run() int {
	code := w.m.Run()
	StopShared()
	return code
}

// StopShared stops the shared server if this process started one.
func StopShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.srv != nil {
		shared.srv.stop()
		if shared.srv.dir != "" {
			_ = os.RemoveAll(shared.srv.dir)
		}
		shared.srv = nil
	}
	if shared.binDir != "" {
		_ = os.RemoveAll(shared.binDir)
		shared.binDir = ""
	}
}

// Get returns the server of this test binary: the one named by the
// environment, or a private one started on first use.
func Get(t testing.TB) *Server {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = getLocked()
	}
	if shared.err != nil {
		t.Fatalf("chtest: %v", shared.err)
	}
	return shared.srv
}

func getLocked() (*Server, error) {
	nat, htp := os.Getenv(EnvNative), os.Getenv(EnvHTTP)
	if nat != "" || htp != "" {
		if nat == "" || htp == "" {
			return nil, fmt.Errorf("set both %s and %s (have %q and %q)", EnvNative, EnvHTTP, nat, htp)
		}
		s := &Server{Native: nat, HTTP: htp, client: newClient()}
		if err := s.waitReady(30 * time.Second); err != nil {
			s.client.CloseIdleConnections()
			return nil, fmt.Errorf("ClickHouse from %s/%s does not answer: %v", EnvNative, EnvHTTP, err)
		}
		return s, nil
	}
	dir, err := os.MkdirTemp("", "chtest-shared-")
	if err != nil {
		return nil, err
	}
	s, err := startLocked(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Start starts a private server for t alone, stopped (and its data
// removed) at t's end. Use it to kill and restart a server.
func Start(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	shared.Lock()
	s, err := startLocked(dir)
	shared.Unlock()
	if err != nil {
		t.Fatalf("chtest: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

// PID is the launcher's process id (0 for a server this package did not
// start or that is stopped): its /proc/PID/stat holds the server's CPU time.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Kill stops the server at once (SIGKILL), as a crash would. Its data stays
// for Restart.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if s.bin == "" {
		t.Fatal("chtest: Kill of a server this package did not start")
	}
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.held = nil, true
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restarts is how many times the server crashed and was started again by
// this package (a test may log it; a crash is also written to stderr).
func (s *Server) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Restart starts a killed server again on the same ports and data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	s.held = false
	s.mu.Unlock()
	if err := s.launch(); err != nil {
		t.Fatalf("chtest: restart: %v", err)
	}
}

// NewDatabase creates a database of its own for t and drops it at t's end.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "t_" + sanitize(t.Name()) + "_" + hex.EncodeToString(b[:])
	s.Exec(t, "CREATE DATABASE IF NOT EXISTS "+name)
	t.Cleanup(func() {
		if _, err := s.query("DROP DATABASE IF EXISTS " + name + " SYNC"); err != nil {
			t.Logf("chtest: drop database %s: %v", name, err)
		}
	})
	return name
}

func sanitize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// Exec runs a statement over HTTP and fails t on error.
func (s *Server) Exec(t testing.TB, sql string) {
	t.Helper()
	if _, err := s.query(sql); err != nil {
		t.Fatalf("chtest: %s: %v", firstLine(sql), err)
	}
}

// Query runs a query over HTTP and returns its result as TSV (no trailing
// newline); it fails t on error.
func (s *Server) Query(t testing.TB, sql string) string {
	t.Helper()
	out, err := s.query(sql)
	if err != nil {
		t.Fatalf("chtest: %s: %v", firstLine(sql), err)
	}
	return strings.TrimSuffix(out, "\n")
}

// QueryInt runs a query returning one integer.
func (s *Server) QueryInt(t testing.TB, sql string) int64 {
	t.Helper()
	out := s.Query(t, sql)
	n, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("chtest: %s: result %q is not an integer", firstLine(sql), out)
	}
	return n
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	return s
}

// query runs sql over HTTP. A server this package started and did not stop
// on purpose may be restarting after a crash of the engine (libchdb aborts
// now and then when a client drops a connection in the middle of an insert;
// see Restarts). So, for up to a minute and a half:
//   - a refused connection (nothing was sent) is tried again;
//   - a connection cut before the answer is tried again when sql is
//     idempotent (see idempotent): it may have been cut by the crash.
//
// Any other statement cut in flight fails: running it twice could change
// what the test measures.
func (s *Server) query(sql string) (string, error) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := s.queryOnce(sql)
		if err == nil || s.bin == "" || time.Now().After(deadline) || !retryable(err, sql) {
			return out, err
		}
		s.mu.Lock()
		held := s.held
		s.mu.Unlock()
		if held {
			return out, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// retryable reports whether query may send sql again after err.
func retryable(err error, sql string) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || (connectionCut(err) && idempotent(sql))
}

// connectionCut reports whether err says the connection broke under a
// request (as a crash of the server breaks it).
func connectionCut(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Read runs read, a function that only reads from the server (over any
// protocol, for example a clickhouse-go connection), and fails t with what
// on error. A read whose connection was refused or cut while this package
// restarts a crashed server is run again, whole, for up to a minute and a
// half, the way query repeats an idempotent statement.
func (s *Server) Read(t testing.TB, what string, read func() error) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := read()
		if err == nil {
			return
		}
		s.mu.Lock()
		held := s.held
		s.mu.Unlock()
		if s.bin == "" || held || time.Now().After(deadline) ||
			!(errors.Is(err, syscall.ECONNREFUSED) || connectionCut(err)) {
			t.Fatalf("chtest: %s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// idempotent reports whether running sql twice leaves the server as running
// it once: reads, and DDL guarded by IF [NOT] EXISTS.
func idempotent(sql string) bool {
	f := strings.Fields(strings.ToUpper(sql))
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "SELECT", "WITH", "SHOW", "EXISTS", "DESCRIBE", "DESC", "EXPLAIN":
		return true
	case "CREATE", "DROP":
		joined := " " + strings.Join(f, " ") + " "
		return strings.Contains(joined, " IF NOT EXISTS ") || strings.Contains(joined, " IF EXISTS ")
	}
	return false
}

func (s *Server) queryOnce(sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.HTTP+"/", strings.NewReader(sql))
	if err != nil {
		return "", err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	return string(body), nil
}

// startLocked builds the launcher and starts a server with its data in dir.
// shared is locked.
func startLocked(dir string) (*Server, error) {
	lib, err := findLib()
	if err != nil {
		return nil, err
	}
	bin, err := buildLauncher()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, lib: lib, dir: dir, client: newClient()}
	var lastErr error
	for range 3 { // a port picked free may be taken before the launcher binds it
		if s.tcpPort, err = freePort(); err != nil {
			return nil, err
		}
		if s.httpPort, err = freePort(); err != nil {
			return nil, err
		}
		s.Native = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tcpPort))
		s.HTTP = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.httpPort))
		if lastErr = s.launch(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// launch starts the launcher process and waits until both ports answer.
func (s *Server) launch() error {
	s.log = filepath.Join(s.dir, "chserver.log")
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("launcher log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, "--lib", s.lib, "--path", filepath.Join(s.dir, "data"),
		"--tcp-port", strconv.Itoa(s.tcpPort), "--http-port", strconv.Itoa(s.httpPort),
		"--lifetime", "6h")
	cmd.Stdout, cmd.Stderr = logf, logf
	// The server dies with the test binary, even when that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go s.wait(cmd, exited)
	s.mu.Lock()
	if s.held { // stopped while a restart after a crash was starting
		s.mu.Unlock()
		_ = cmd.Process.Kill()
		<-exited
		return errors.New("ClickHouse server stopped while it was starting")
	}
	s.cmd, s.exited, s.up = cmd, exited, false
	s.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			s.mu.Lock()
			if s.cmd == cmd {
				s.cmd = nil
			}
			s.mu.Unlock()
			return fmt.Errorf("ClickHouse launcher exited (%v): %s", cmd.ProcessState, tail(s.log))
		default:
		}
		if s.answers() {
			s.mu.Lock()
			defer s.mu.Unlock()
			select {
			case <-exited: // died between the answer and now: launch's failure
				if s.cmd == cmd {
					s.cmd = nil
				}
				return fmt.Errorf("ClickHouse launcher exited (%v): %s", cmd.ProcessState, tail(s.log))
			default:
			}
			s.up = true
			return nil
		}
		if time.Now().After(deadline) {
			s.mu.Lock()
			if s.cmd == cmd {
				s.cmd = nil
			}
			s.mu.Unlock()
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("ClickHouse launcher did not answer within 60s: %s", tail(s.log))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wait reaps cmd and, when a server that had answered dies without stop or
// Kill asking for it, says so on stderr with the end of its log and starts
// it again on the same ports and data: a crash of the test server (it is
// clickhouse-local serving, not a supervised clickhouse-server) must cost
// the tests that were talking to it at that moment, not every later one.
func (s *Server) wait(cmd *exec.Cmd, exited chan struct{}) {
	_ = cmd.Wait()
	close(exited)
	s.mu.Lock()
	crashed := s.cmd == cmd && s.up
	if crashed {
		s.cmd, s.up = nil, false
		s.restarts++
	}
	s.mu.Unlock()
	if !crashed {
		return
	}
	fmt.Fprintf(os.Stderr, "chtest: ClickHouse server pid %d (native %s, http %s) exited by itself (%v); restarting it on the same ports and data. End of its log:\n%s\n",
		cmd.Process.Pid, s.Native, s.HTTP, cmd.ProcessState, tail(s.log))
	for attempt := 1; attempt <= 5; attempt++ {
		s.mu.Lock()
		held := s.held
		s.mu.Unlock()
		if held {
			return
		}
		err := s.launch()
		if err == nil {
			fmt.Fprintf(os.Stderr, "chtest: ClickHouse server on %s restarted\n", s.HTTP)
			return
		}
		fmt.Fprintf(os.Stderr, "chtest: restart %d of ClickHouse server on %s failed: %v\n", attempt, s.HTTP, err)
		time.Sleep(time.Second)
	}
}

// answers reports whether both protocols accept connections and HTTP
// answers a query.
func (s *Server) answers() bool {
	c, err := net.DialTimeout("tcp", s.Native, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	out, err := s.queryOnce("SELECT 1")
	return err == nil && strings.TrimSpace(out) == "1"
}

func (s *Server) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if s.answers() {
			return nil
		}
		if time.Now().After(deadline) {
			_, err := s.queryOnce("SELECT 1")
			return fmt.Errorf("native %s / http %s: %v", s.Native, s.HTTP, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the server (SIGTERM, then SIGKILL after 10s) and releases the
// HTTP client's connections.
func (s *Server) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.held = nil, true
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	s.client.CloseIdleConnections()
}

// newClient is the HTTP client of a Server. It keeps no idle connections:
// one left from before a crash would fail the first query after the restart
// with a reset that cannot be told from a query cut in flight, where a fresh
// dial is refused (nothing sent, safe to try again) until the server is back.
func newClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return &http.Client{Timeout: 2 * time.Minute, Transport: tr}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "(no output)"
	}
	return string(bytes.TrimSpace(b))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// repoRoot is the directory of go.mod above the working directory (tests
// run in their package's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func findLib() (string, error) {
	if p := os.Getenv(EnvLib); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w; %s", EnvLib, p, err, installHint)
		}
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", fmt.Errorf("%v; %s", err, installHint)
	}
	p := filepath.Join(root, libRel)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found; %s", p, installHint)
	}
	return p, nil
}

// buildLauncher builds cmd/chserver without cgo, once per test binary, into
// a directory of its own (test binaries of several packages run at once).
// shared is locked.
func buildLauncher() (string, error) {
	if shared.binDir != "" {
		return filepath.Join(shared.binDir, "chserver"), nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "chtest-bin-")
	if err != nil {
		return "", fmt.Errorf("launcher directory: %w", err)
	}
	bin := filepath.Join(dir, "chserver")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/chserver")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("build cmd/chserver: %v: %s", err, out)
	}
	shared.binDir = dir
	return bin, nil
}
