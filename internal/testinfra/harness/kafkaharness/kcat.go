package kafkaharness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/testinfra/simtest"
)

// Message is one record as kcat printed it.
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Headers   []string // key, value, key, value, ...
	Key       []byte   // nil: a NULL key
	Value     []byte   // nil: a NULL value
	// Timestamp is the message timestamp, Unix milliseconds.
	Timestamp int64
}

// kcatFormat frames every record exactly: a line "PARTITION OFFSET
// KEYLEN VALUELEN TIMESTAMP HEADERS" (headers as kcat's n=v CSV), then the key and
// the value by their lengths and a newline. Lengths make the framing
// independent of the bytes of a raw record (newlines, tabs), and nothing
// needs unescaping, unlike -J.
const kcatFormat = `%p %o %K %S %T %h\n%k%s\n`

// readMessage reads one record of kcatFormat; io.EOF at a clean end.
func readMessage(r *bufio.Reader, topic string) (*Message, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if err == io.EOF && line == "" {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("frame line %q: %w", line, err)
	}
	f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 6)
	if len(f) < 5 {
		return nil, fmt.Errorf("frame line %q", line)
	}
	m := &Message{Topic: topic}
	var n [5]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return nil, fmt.Errorf("frame line %q: field %d: %v", line, i, err)
		}
	}
	m.Partition, m.Offset, m.Timestamp = int32(n[0]), n[1], n[4]
	klen, vlen := int(n[2]), int(n[3])
	if len(f) == 6 && f[5] != "" {
		for _, kv := range strings.Split(f[5], ",") {
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

// EndOffsets returns the end offset of every partition of topics, asked
// with a franz-go admin client (the producer must have stopped). A topic
// the broker does not have fails tb.
func EndOffsets(tb testing.TB, addr string, topics []string) map[string]map[int32]int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		tb.Fatalf("list end offsets of %v: %v", topics, err)
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
		tb.Fatalf("end offsets: %s", strings.Join(errs, "; "))
	}
	for _, tp := range topics {
		if out[tp] == nil {
			tb.Fatalf("topic %s does not exist on the broker", tp)
		}
	}
	return out
}

// Consume reads every topic from its beginning to its end with kcat (-o
// beginning -e: exit at the end of every partition), one kcat per topic
// running concurrently, and hands each message to fn on the test's
// goroutine. It checks that kcat saw every offset of every partition, in
// order, up to the end offsets the broker reports, so nothing was skipped.
// It returns the number of messages.
func Consume(tb testing.TB, addr string, topics []string, fn func(m *Message)) int {
	tb.Helper()
	return consume(tb, addr, topics, false, fn)
}

// ConsumeCommitted is Consume for topics written with transactions: kcat
// reads with isolation.level=read_committed (asked for explicitly), and
// since transaction markers and aborted records leave gaps in what it
// returns, it checks that offsets only grow (no record twice) and stay
// below the broker's end offsets, not that every offset was seen.
func ConsumeCommitted(tb testing.TB, addr string, topics []string, fn func(m *Message)) int {
	tb.Helper()
	return consume(tb, addr, topics, true, fn)
}

func consume(tb testing.TB, addr string, topics []string, committed bool, fn func(m *Message)) int {
	tb.Helper()
	kcat := KcatBin(tb)
	ends := EndOffsets(tb, addr, topics)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	msgs := make(chan *Message, 1024)
	type result struct {
		topic string
		next  map[int32]int64
		err   error
	}
	results := make(chan result, len(topics))
	var wg sync.WaitGroup
	for _, topic := range topics {
		wg.Go(func() {
			next, err := consumeTopic(ctx, kcat, addr, topic, committed, msgs)
			results <- result{topic, next, err}
		})
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
			tb.Fatal(r.err)
		}
		for p, end := range ends[r.topic] {
			if committed && r.next[p] > end || !committed && r.next[p] != end {
				tb.Fatalf("%s/%d: kcat read offsets up to %d, the broker's end offset is %d", r.topic, p, r.next[p], end)
			}
		}
		for p := range r.next {
			if _, ok := ends[r.topic][p]; !ok {
				tb.Fatalf("%s: kcat read partition %d the broker does not list", r.topic, p)
			}
		}
	}
	return total
}

// consumeTopic reads one topic with kcat into msgs and returns the next
// offset of each partition it read (the count, as every offset is checked
// in sequence; with committed, read_committed and past the last offset
// read, which only grows).
func consumeTopic(ctx context.Context, kcat, addr, topic string, committed bool, msgs chan<- *Message) (map[int32]int64, error) {
	args := []string{"-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q", "-f", kcatFormat}
	if committed {
		args = append(args, "-X", "isolation.level=read_committed")
	}
	cmd := exec.CommandContext(ctx, kcat, args...)
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
		m, err := readMessage(br, topic)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err)
		}
		switch {
		case committed && m.Offset < next[m.Partition]:
			return fail(fmt.Errorf("partition %d: offset %d, want at least %d (a repeat)", m.Partition, m.Offset, next[m.Partition]))
		case !committed && m.Offset != next[m.Partition]:
			return fail(fmt.Errorf("partition %d: offset %d, want %d (a gap or a repeat)", m.Partition, m.Offset, next[m.Partition]))
		}
		next[m.Partition] = m.Offset + 1
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
