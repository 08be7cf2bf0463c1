package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// The Kafka end-to-end tests run the collector binary against the project's
// standalone broker (cmd/kafkabroker, franz-go's kfake) as a separate
// process, and read the topics back with Debian's kcat (librdkafka): a
// consumer of another client family than the producer under test.

var (
	brokerOnce sync.Once
	brokerBin  string
	brokerErr  error
)

// kafkaBrokerBin builds cmd/kafkabroker once per test run, next to the
// collector binary (TestMain removes that directory).
func kafkaBrokerBin(t testing.TB) string {
	t.Helper()
	brokerOnce.Do(func() {
		bin := filepath.Join(filepath.Dir(collectorBin), "kafkabroker")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/svcexport/collector/cmd/kafkabroker").CombinedOutput()
		if err != nil {
			brokerErr = fmt.Errorf("build kafkabroker: %v\n%s", err, out)
			return
		}
		brokerBin = bin
	})
	if brokerErr != nil {
		t.Fatal(brokerErr)
	}
	return brokerBin
}

// kcatBin returns kcat's path; the tests fail (not skip) without it, as CI
// installs it (scripts/test.sh).
func kcatBin(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not installed: scripts/test.sh installs it (apt-get install -y kcat)")
	}
	return p
}

// kafkaBroker is a cmd/kafkabroker process.
type kafkaBroker struct {
	cmd  *exec.Cmd
	addr string // host:port of its one broker
	logs *simtest.SyncBuffer
	done chan error
}

// startKafkaBroker starts one broker on port (0: a free one) with args
// (e.g. --data-dir, --seed-topics) and waits for its "ready" line. The test's
// cleanup stops it.
func startKafkaBroker(t testing.TB, port int, args ...string) *kafkaBroker {
	t.Helper()
	bin := kafkaBrokerBin(t)
	args = append([]string{"--listen", "127.0.0.1", "--ports", fmt.Sprint(port), "--log-level", "warn"}, args...)
	cmd := exec.Command(bin, args...)
	stdout, logs := &simtest.SyncBuffer{}, &simtest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, logs
	b := &kafkaBroker{cmd: cmd, logs: logs, done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start kafkabroker: %v", err)
	}
	go func() { b.done <- cmd.Wait() }()
	t.Cleanup(b.stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			addrs, found := strings.CutPrefix(line, "ready ")
			if !found {
				t.Fatalf("kafkabroker printed %q, want \"ready ADDR\"\n%s", line, logs.String())
			}
			b.addr = strings.Split(addrs, ",")[0]
			return b
		}
		select {
		case err := <-b.done:
			b.done <- err
			t.Fatalf("kafkabroker %v exited before it was ready (%v)\n%s", args, err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafkabroker %v not ready within 20s\n%s", args, logs.String())
		}
	}
}

// stop sends SIGTERM (kfake persists the data directory on close) and
// waits; a broker that does not stop within 15 s is killed. Safe to call
// twice.
func (b *kafkaBroker) stop() {
	if b.cmd.Process == nil {
		return
	}
	select {
	case err := <-b.done:
		b.done <- err
		return
	default:
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-b.done:
		b.done <- err
	case <-time.After(15 * time.Second):
		b.cmd.Process.Kill()
		b.done <- <-b.done
	}
}

// exitErr waits for the broker process to be gone and returns how it
// exited (nil: status 0).
func (b *kafkaBroker) exitErr() error {
	err := <-b.done
	b.done <- err
	return err
}

// lowFreePort returns a loopback port below Linux's ephemeral range
// (32768-60999) that nobody listens on now. A broker that is restarted on
// its port needs one: while it is down, the collector dials the port again
// and again, and a dial from an ephemeral port can, rarely, connect to
// itself (TCP simultaneous open) and hold the port.
func lowFreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port in 20000-31999")
	return 0
}

// kafkaSinkYAML is the sink section for the collector's config file.
func kafkaSinkYAML(addr string, extra ...string) string {
	y := "sink:\n  type: kafka\n  kafka:\n    brokers: [" + addr + "]\n"
	for _, e := range extra {
		y += "    " + e + "\n"
	}
	return y
}

// kcatMessage is one record as kcat printed it.
type kcatMessage struct {
	Topic     string
	Partition int32
	Offset    int64
	Headers   []string // key, value, key, value, ...
	Key       []byte   // nil: a NULL key
	Value     []byte   // nil: a NULL value
}

// kcatFormat frames every record exactly: a line "PARTITION OFFSET
// KEYLEN VALUELEN HEADERS" (headers as kcat's n=v CSV), then the key and
// the value by their lengths and a newline. Lengths make the framing
// independent of the bytes of a raw record (newlines, tabs), and nothing
// needs unescaping, unlike -J.
const kcatFormat = `%p %o %K %S %h\n%k%s\n`

// readKcatMessage reads one record of kcatFormat; io.EOF at a clean end.
func readKcatMessage(r *bufio.Reader, topic string) (*kcatMessage, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if err == io.EOF && line == "" {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("frame line %q: %w", line, err)
	}
	f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 5)
	if len(f) < 4 {
		return nil, fmt.Errorf("frame line %q", line)
	}
	m := &kcatMessage{Topic: topic}
	var n [4]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return nil, fmt.Errorf("frame line %q: field %d: %v", line, i, err)
		}
	}
	m.Partition, m.Offset = int32(n[0]), n[1]
	klen, vlen := int(n[2]), int(n[3])
	if len(f) == 5 && f[4] != "" {
		for _, kv := range strings.Split(f[4], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("frame line %q: header %q is not n=v", line, kv)
			}
			m.Headers = append(m.Headers, k, v)
		}
	}
	read := func(n int) ([]byte, error) {
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	if m.Key, err = read(klen); err != nil {
		return nil, fmt.Errorf("%d/%d: key: %w", m.Partition, m.Offset, err)
	}
	if m.Value, err = read(vlen); err != nil {
		return nil, fmt.Errorf("%d/%d: value: %w", m.Partition, m.Offset, err)
	}
	if c, err := r.ReadByte(); err != nil || c != '\n' {
		return nil, fmt.Errorf("%d/%d: no newline after the value (%q, %v)", m.Partition, m.Offset, c, err)
	}
	return m, nil
}

// kafkaEndOffsets returns the end offset of every partition of topics, asked
// with a franz-go admin client (the collector must have stopped).
func kafkaEndOffsets(t testing.TB, addr string, topics []string) map[string]map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatalf("list end offsets of %v: %v", topics, err)
	}
	out := map[string]map[int32]int64{}
	var errs []string
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Sprintf("%s/%d: %v", o.Topic, o.Partition, o.Err))
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		t.Fatalf("end offsets: %s", strings.Join(errs, "; "))
	}
	for _, tp := range topics {
		if out[tp] == nil {
			t.Fatalf("topic %s does not exist on the broker", tp)
		}
	}
	return out
}

// kcatConsume reads every topic from its beginning to its end with kcat
// (-o beginning -e: exit at the end of every partition), one kcat per topic
// running concurrently, and hands each message to fn on the test's
// goroutine. It checks that kcat saw every offset of every partition, in
// order, up to the end offsets the broker reports, so nothing was skipped.
// It returns the number of messages.
func kcatConsume(t testing.TB, addr string, topics []string, fn func(m *kcatMessage)) int {
	t.Helper()
	kcat := kcatBin(t)
	ends := kafkaEndOffsets(t, addr, topics)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	msgs := make(chan *kcatMessage, 1024)
	type result struct {
		topic string
		next  map[int32]int64
		err   error
	}
	results := make(chan result, len(topics))
	var wg sync.WaitGroup
	for _, topic := range topics {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next, err := kcatTopic(ctx, kcat, addr, topic, msgs)
			results <- result{topic, next, err}
		}()
	}
	go func() { wg.Wait(); close(msgs) }()
	defer func() { // also when fn fails the test: stop every kcat, end every reader
		cancel()
		for range msgs {
		}
	}()
	total := 0
	for m := range msgs {
		total++
		fn(m)
	}
	for range topics {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		for p, end := range ends[r.topic] {
			if r.next[p] != end {
				t.Fatalf("%s/%d: kcat read offsets up to %d, the broker's end offset is %d", r.topic, p, r.next[p], end)
			}
		}
		for p := range r.next {
			if _, ok := ends[r.topic][p]; !ok {
				t.Fatalf("%s: kcat read partition %d the broker does not list", r.topic, p)
			}
		}
	}
	return total
}

// kcatTopic reads one topic with kcat into msgs and returns the next offset
// of each partition it read (the count, as every offset is checked in
// sequence).
func kcatTopic(ctx context.Context, kcat, addr, topic string, msgs chan<- *kcatMessage) (map[int32]int64, error) {
	cmd := exec.CommandContext(ctx, kcat, "-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q", "-f", kcatFormat)
	var stderr simtest.SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kcat: %w", err)
	}
	fail := func(err error) (map[int32]int64, error) {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("kcat -t %s: %w\n%s", topic, err, stderr.String())
	}
	next := map[int32]int64{} // next offset expected per partition
	br := bufio.NewReaderSize(out, 1<<20)
	for {
		m, err := readKcatMessage(br, topic)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err)
		}
		if m.Offset != next[m.Partition] {
			return fail(fmt.Errorf("partition %d: offset %d, want %d (a gap or a repeat)", m.Partition, m.Offset, next[m.Partition]))
		}
		next[m.Partition]++
		select {
		case msgs <- m:
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("kcat -t %s: %w\n%s", topic, err, stderr.String())
	}
	return next, nil
}

// liveStream is one stream of the collector's live /state.
type liveStream struct {
	Source    string    `json:"source"`
	Account   string    `json:"account"`
	Watermark time.Time `json:"watermark"`
	Delivered int64     `json:"rows_delivered"`
	CaughtUp  bool      `json:"caught_up"`
	LastError string    `json:"last_error"`
}

// readLiveState reads GET /state of a collector's metrics server; nil when it
// does not answer.
func readLiveState(addr string) map[streamKey]liveStream {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/state")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	var st []liveStream
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	out := map[streamKey]liveStream{}
	for _, s := range st {
		out[streamKey{s.Source, s.Account}] = s
	}
	return out
}

// sumDelivered sums rows_delivered over every stream.
func sumDelivered(st map[streamKey]liveStream) int64 {
	var n int64
	for _, s := range st {
		n += s.Delivered
	}
	return n
}

// liveWatermarks turns live states into checkpoint states for
// compareWithTruth, keeping only streams whose watermark passed from.
func liveWatermarks(st map[streamKey]liveStream, from time.Time) (map[streamKey]checkpoint.State, []streamKey) {
	out := map[streamKey]checkpoint.State{}
	var keys []streamKey
	for k, s := range st {
		if s.Watermark.After(from) {
			out[k] = checkpoint.State{Watermark: s.Watermark, Delivered: s.Delivered}
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].source+keys[i].account < keys[j].source+keys[j].account })
	return out, keys
}

// noKafkaDeadLetters fails when the Kafka sink wrote a dead-letter file
// next to the checkpoint.
func noKafkaDeadLetters(t testing.TB, s *setup) {
	t.Helper()
	p := filepath.Join(filepath.Dir(s.checkpointPath()), "dead-letters.ndjson")
	if b, err := os.ReadFile(p); err == nil {
		t.Errorf("dead letters written (%d bytes): %.500s", len(b), b)
	}
}

// kafkaTopics returns prefix+source for each source.
func kafkaTopics(sources []string, prefix string) []string {
	out := make([]string, len(sources))
	for i, s := range sources {
		out[i] = prefix + s
	}
	return out
}

// addDecoded is output.add for a record whose envelope fields are already
// decoded (one JSON decoding per record instead of two: the race detector
// makes decoding the bulk of a read-back). It checks that id is the C7 id
// of raw, as output.add does.
func addDecoded(t testing.TB, out *output, id, src, account, recTime string, raw []byte) {
	t.Helper()
	if got, err := record.ID(src, raw); err != nil || got != id {
		t.Fatalf("id %s is not the C7 id of its record (%s, %v): %.300s", id, got, err, raw)
	}
	tm, err := time.Parse(time.RFC3339Nano, recTime)
	if err != nil {
		t.Fatalf("record %s: time %q: %v", id, recTime, err)
	}
	k := streamKey{src, account}
	if out.ids[k] == nil {
		out.ids[k] = map[string]int{}
	}
	out.ids[k][id]++
	out.times[id] = tm
	out.total++
}
