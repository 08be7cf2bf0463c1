package kafkaharness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// Broker is a cmd/kafkabroker process with one broker.
type Broker struct {
	*harness.Process
	Addr string // host:port of its broker
}

// StartBroker builds cmd/kafkabroker (once per test binary) and starts one
// broker on port (0: a free one; harness.LowFreePort for a broker that is
// restarted on its port) with args (e.g. --data-dir, --seed-topics), and
// waits for its "ready" line. The test's cleanup stops it (Stop).
func StartBroker(tb testing.TB, port int, args ...string) *Broker {
	tb.Helper()
	bin := harness.GoBuild(tb, harness.Module+"/cmd/kafkabroker")
	args = append([]string{"--listen", "127.0.0.1", "--ports", fmt.Sprint(port), "--log-level", "warn"}, args...)
	cmd := exec.Command(bin, args...)
	stdout := &simtest.SyncBuffer{}
	cmd.Stdout = stdout
	b := &Broker{Process: harness.StartCommand(tb, cmd)}
	tb.Cleanup(func() { b.Stop() }) // before StartCommand's kill: cleanups run last first
	deadline := time.Now().Add(20 * time.Second)
	for {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			addrs, found := strings.CutPrefix(line, "ready ")
			if !found {
				tb.Fatalf("kafkabroker printed %q, want \"ready ADDR\"\n%s", line, b.Logs())
			}
			b.Addr = strings.Split(addrs, ",")[0]
			return b
		}
		select {
		case <-b.Exited():
			tb.Fatalf("kafkabroker %v exited before it was ready (%v)\n%s", args, b.Err(), b.Logs())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("kafkabroker %v not ready within 20s\n%s", args, b.Logs())
		}
	}
}

// Stop sends SIGTERM (kfake persists the data directory on close) and
// waits; a broker that does not stop within 15 s is killed. It returns how
// the broker exited (nil: status 0) and is safe to call twice.
func (b *Broker) Stop() error { return b.Process.Stop(15 * time.Second) }

// KcatBin returns kcat's path; a test fails (not skips) without it, as CI
// installs it (scripts/test.sh: apt-get install -y kcat).
func KcatBin(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		tb.Fatal("kcat not installed: scripts/test.sh installs it (apt-get install -y kcat)")
	}
	return p
}

// SinkYAML is the Kafka sink section of a collector's configuration
// (harness.Config.Sink): brokers addr, plus extra keys of sink.kafka
// ("create_topics: true", "format: record", ...).
func SinkYAML(addr string, extra ...string) string {
	y := "sink:\n  type: kafka\n  kafka:\n    brokers: [" + addr + "]\n"
	for _, e := range extra {
		y += "    " + e + "\n"
	}
	return y
}

// Topics returns prefix+source for each source.
func Topics(sources []string, prefix string) []string {
	out := make([]string, len(sources))
	for i, s := range sources {
		out[i] = prefix + s
	}
	return out
}

// NoDeadLetters fails tb when the Kafka sink wrote a dead-letter file next
// to c's checkpoint.
func NoDeadLetters(tb testing.TB, c *harness.Collector) {
	tb.Helper()
	p := filepath.Join(filepath.Dir(c.CheckpointPath()), "dead-letters.ndjson")
	if b, err := os.ReadFile(p); err == nil {
		tb.Errorf("dead letters written (%d bytes): %.500s", len(b), b)
	}
}
