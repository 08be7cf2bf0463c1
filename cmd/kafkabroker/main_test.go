package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// broker runs run() in the background and returns its addresses and a
// stop function that ends it and waits.
func broker(t *testing.T, args ...string) ([]string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, pw, io.Discard)
		pw.Close()
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no ready line: %v (run: %v)", err, <-done)
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain until run ends
	addrs, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if !ok {
		t.Fatalf("first line %q, want \"ready ADDRS\"", line)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}
	t.Cleanup(stop)
	return strings.Split(addrs, ","), stop
}

func produce(t *testing.T, addrs []string, topic string, n int, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i := range n {
		r := kgo.KeyStringRecord("k"+string(rune('a'+i)), "v")
		r.Topic = topic
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

func TestRecordsSurviveARestartWithDataDir(t *testing.T) {
	dir := t.TempDir()
	addrs, stop := broker(t, "--ports", "0,0", "--data-dir", dir, "--seed-topics", "svc.dns:2,svc.audit_logs")
	if len(addrs) != 2 {
		t.Fatalf("addresses %v, want two brokers", addrs)
	}
	produce(t, addrs, "svc.dns", 10)
	stop()

	addrs, _ = broker(t, "--ports", "0,0", "--data-dir", dir)
	recs := kafkatest.ReadAll(t, addrs, []string{"svc.dns"})
	if len(recs) != 10 {
		t.Fatalf("read %d records after the restart, want 10", len(recs))
	}

	noDir, stop := broker(t, "--ports", "0", "--seed-topics", "svc.dns")
	produce(t, noDir, "svc.dns", 3)
	stop()
	noDir, _ = broker(t, "--ports", "0", "--seed-topics", "svc.dns")
	if recs := kafkatest.ReadAll(t, noDir, []string{"svc.dns"}); len(recs) != 0 {
		t.Fatalf("without --data-dir %d records survived", len(recs))
	}
}

func TestTLSAndSCRAM(t *testing.T) {
	dir := t.TempDir()
	ca := kafkatest.NewCA(t)
	cert, key := ca.Issue(t, "127.0.0.1", "localhost")
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	addrs, _ := broker(t, "--ports", "0", "--tls-cert", certFile, "--tls-key", keyFile,
		"--sasl-scram", "collector:s3cret", "--seed-topics", "svc.dns:1")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	opts := []kgo.Opt{
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: "collector", Pass: "s3cret"}.AsSha512Mechanism()),
	}
	produce(t, addrs, "svc.dns", 4, opts...)
	if recs := kafkatest.ReadAll(t, addrs, []string{"svc.dns"}, opts...); len(recs) != 4 {
		t.Fatalf("read %d records, want 4", len(recs))
	}
}

func TestBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0"}, "--listen 0.0.0.0"},
		{[]string{"--ports", "19092,x"}, `--ports: "x" is not a port`},
		{[]string{"--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"--sync-writes"}, "--sync-writes needs --data-dir"},
		{[]string{"--sasl-scram", "nopass"}, "--sasl-scram: want USER:PASS"},
		{[]string{"--seed-topics", "a:zero"}, `--seed-topics: "a:zero"`},
		{[]string{"--broker-config", "novalue"}, "--broker-config: want KEY=VALUE"},
		{[]string{"--log-level", "loud"}, `--log-level: unknown level "loud"`},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		err := run(context.Background(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run %v = %v, want %q", tt.args, err, tt.want)
		}
	}
}

// TestBinaryStopsOnSIGTERM builds the command and checks the contract CI
// relies on: a "ready" line on stdout, exit 0 on SIGTERM.
func TestBinaryStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "kafkabroker")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--ports", "0", "--seed-topics", "svc.dns")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready 127.0.0.1:") {
		_ = cmd.Process.Kill()
		t.Fatalf("first line %q (%v), stderr %s", line, err, stderr.String())
	}
	addrs := strings.Split(strings.TrimSpace(strings.TrimPrefix(line, "ready ")), ",")
	produce(t, addrs, "svc.dns", 2)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v, stderr %s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-waited
		t.Fatal("still running 15 s after SIGTERM")
	}
}
