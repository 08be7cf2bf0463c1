package kafka_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
	"github.com/svcexport/collector/internal/tlsconfig"
)

func TestWriteDeliversEveryRecordWithKeyHeadersAndEnvelope(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(3, "svc.dns", "svc.connections"))
	reg := prometheus.NewRegistry()
	streams := []record.Stream{{Source: "dns", Account: "acme"}, {Source: "dns", Account: "beta"}, {Source: "connections", Account: "acme"}}
	s, _ := startSink(t, testConfig(c), streams, reg)

	batches := []*record.Batch{
		makeBatch(t, "dns", "acme", 0, 0, 100, 40),
		makeBatch(t, "dns", "beta", 0, 0, 100, 40),
		makeBatch(t, "connections", "acme", 0, 0, 50, 40),
		makeBatch(t, "dns", "acme", 1, 100, 100, 40),
	}
	for _, b := range batches {
		write(t, s, b)
	}

	recs := kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns", "svc.connections"})
	got := byKey(t, recs, true)
	total := 0
	for _, b := range batches {
		for i := range b.Envelopes {
			total++
			e := &b.Envelopes[i]
			r, ok := got[e.ID]
			if !ok {
				t.Fatalf("record %s of %s/%s missing", e.ID, e.Source, e.Account)
			}
			if want := "svc." + e.Source; r.Topic != want {
				t.Errorf("record %s in topic %s, want %s", e.ID, r.Topic, want)
			}
			if want := e.AppendJSON(nil); !bytes.Equal(r.Value, want) {
				t.Errorf("value of %s:\n got %s\nwant %s", e.ID, r.Value, want)
			}
			if !json.Valid(r.Value) {
				t.Errorf("value of %s is not JSON", e.ID)
			}
			for k, want := range map[string]string{
				kafkarecord.HeaderSource:      e.Source,
				kafkarecord.HeaderAccount:     e.Account,
				kafkarecord.HeaderTime:        record.FormatTime(e.Time),
				kafkarecord.HeaderWindowStart: "2026-11-20T00:00:00.000Z",
				kafkarecord.HeaderWindowEnd:   "2026-11-20T01:00:00.000Z",
				kafkarecord.HeaderFetchedAt:   "2026-11-22T10:00:00.123Z",
				kafkarecord.HeaderContentType: "application/json",
			} {
				if v := header(t, r, k); v != want {
					t.Errorf("record %s header %s = %q, want %q", e.ID, k, v, want)
				}
			}
			// The envelope's seven and the batch header of delivery
			// exactly_once (the default).
			if len(r.Headers) != 8 || header(t, r, kafka.HeaderBatch) == "" {
				t.Errorf("record %s has %d headers, want 8 with %s", e.ID, len(r.Headers), kafka.HeaderBatch)
			}
			if ct := r.Attrs.CompressionType(); ct != 4 {
				t.Errorf("record %s batch codec %d, want 4 (zstd)", e.ID, ct)
			}
		}
	}
	if len(recs) != total {
		t.Errorf("read %d records, wrote %d", len(recs), total)
	}

	m := gather(t, reg)
	for k, want := range map[string]float64{
		`collector_sink_records_total{sink="kafka"}`:                      350,
		`collector_kafka_records_produced_total{topic="svc.dns"}`:         300,
		`collector_kafka_records_produced_total{topic="svc.connections"}`: 50,
		`collector_kafka_produce_latency_seconds_count{}`:                 4,
		`collector_sink_write_duration_seconds_count{sink="kafka"}`:       4,
		`collector_kafka_buffered_records{}`:                              0,
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	if m[`collector_kafka_bytes_produced_total{}`] <= 0 || m[`collector_kafka_bytes_produced_total{}`] >= m[`collector_kafka_uncompressed_bytes_produced_total{}`] {
		t.Errorf("bytes produced %v should be positive and below the uncompressed %v (zstd)",
			m[`collector_kafka_bytes_produced_total{}`], m[`collector_kafka_uncompressed_bytes_produced_total{}`])
	}
}

func TestEachCodecAndTheRecordFormat(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	for _, tt := range []struct {
		codec  string
		format string
		want   uint8 // Kafka attribute codec
	}{
		{"zstd", kafka.FormatRecord, 4},
		{"lz4", kafka.FormatRecord, 3},
		{"snappy", kafka.FormatEnvelope, 2},
		{"gzip", kafka.FormatRecord, 1},
		{"none", kafka.FormatRecord, 0},
	} {
		t.Run(tt.codec+"/"+tt.format, func(t *testing.T) {
			cfg := testConfig(c)
			cfg.Compression, cfg.Format = tt.codec, tt.format
			cfg.Topic = "codec-" + tt.codec + ".{source}"
			cfg.CreateTopics = true
			streams := []record.Stream{{Source: "dns", Account: "acme"}}
			s, _ := startSink(t, cfg, streams, nil)
			b := makeBatch(t, "dns", "acme", 0, 0, 200, 100)
			write(t, s, b)

			got := byKey(t, kafkatest.ReadAll(t, c.ListenAddrs(), []string{"codec-" + tt.codec + ".dns"}), true)
			if len(got) != len(b.Envelopes) {
				t.Fatalf("read %d records, wrote %d", len(got), len(b.Envelopes))
			}
			for i := range b.Envelopes {
				e := &b.Envelopes[i]
				r := got[e.ID]
				if r == nil {
					t.Fatalf("record %s missing", e.ID)
				}
				want := e.Record
				if tt.format == kafka.FormatEnvelope {
					want = e.AppendJSON(nil)
				}
				if !bytes.Equal(r.Value, want) {
					t.Fatalf("value of %s:\n got %s\nwant %s", e.ID, r.Value, want)
				}
				if v := header(t, r, kafkarecord.HeaderTime); v != record.FormatTime(e.Time) {
					t.Errorf("time header %q, want %q", v, record.FormatTime(e.Time))
				}
				if ct := r.Attrs.CompressionType(); ct != tt.want {
					t.Errorf("codec %d, want %d", ct, tt.want)
				}
			}
		})
	}
}

func TestAccountPartitionerPutsOneAccountOnOnePartition(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	accounts := []string{"acme", "beta", "gamma", "delta", "epsilon", "zeta"}
	partitionsOf := func(t *testing.T, partitioner string) map[string]map[int32]int {
		cfg := testConfig(c)
		cfg.Partitioner = partitioner
		cfg.Topic = partitioner + ".{source}"
		cfg.CreateTopics, cfg.Partitions = true, 8
		var streams []record.Stream
		for _, a := range accounts {
			streams = append(streams, record.Stream{Source: "dns", Account: a})
		}
		s, _ := startSink(t, cfg, streams, nil)
		for _, a := range accounts {
			write(t, s, makeBatch(t, "dns", a, 0, 0, 60, 10))
		}
		out := map[string]map[int32]int{}
		recs := kafkatest.ReadAll(t, c.ListenAddrs(), []string{partitioner + ".dns"})
		if len(recs) != 60*len(accounts) {
			t.Fatalf("read %d records, want %d", len(recs), 60*len(accounts))
		}
		for _, r := range recs {
			a := header(t, r, kafkarecord.HeaderAccount)
			if out[a] == nil {
				out[a] = map[int32]int{}
			}
			out[a][r.Partition]++
		}
		return out
	}
	t.Run("account", func(t *testing.T) {
		for a, parts := range partitionsOf(t, kafka.PartitionByAccount) {
			if len(parts) != 1 {
				t.Errorf("account %s spread over partitions %v", a, parts)
			}
		}
	})
	t.Run("key spreads an account", func(t *testing.T) {
		for a, parts := range partitionsOf(t, kafka.PartitionByKey) {
			if len(parts) < 2 {
				t.Errorf("account %s on partitions %v only: the key partitioner should spread it", a, parts)
			}
		}
	})
}

// TestBrokerFaultsLoseNothing makes the broker fail and stall produce
// requests while the test plays the pipeline: it retries each batch until
// Write returns nil and then checks that every record of that batch is
// readable already. In the end every id is there.
func TestBrokerFaultsLoseNothing(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(3, "svc.dns"))
	cfg := testConfig(c)
	cfg.RequestTimeout = 500 * time.Millisecond
	cfg.DeliveryTimeout = 6 * time.Second
	s, _ := startSink(t, cfg, []record.Stream{{Source: "dns", Account: "acme"}, {Source: "dns", Account: "beta"}}, nil)

	var batches []*record.Batch
	for i := range 12 {
		acct := []string{"acme", "beta"}[i%2]
		batches = append(batches, makeBatch(t, "dns", acct, i/2, i/2*200, 200, 30))
	}
	var swallow atomic.Int32 // produce requests left to leave unanswered
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if swallow.Load() > 0 && swallow.Add(-1) >= 0 {
			return nil, nil, true // never answered: the client times out and retries
		}
		return nil, nil, false
	})

	var failedWrites int
	var faults []*kfake.FaultHandle
	for i, b := range batches {
		switch i {
		case 1: // refused outright: franz-go gives up, Write must fail
			faults = append(faults, c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.UnknownServerError, Count: 3}))
		case 4: // written, but answered with a timeout: retried, deduplicated
			faults = append(faults, c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.RequestTimedOut, Count: 3}))
		case 6: // retriable: franz-go retries by itself (after a metadata
			// refresh, at most every 5 s)
			faults = append(faults, c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: 1}))
		case 8: // stalled: no answer at all
			swallow.Store(2)
		case 10: // a burst of refusals
			faults = append(faults, c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.CorruptMessage, Count: 2}))
		}
		for attempt := 1; ; attempt++ {
			// Longer than franz-go's 5 s metadata min age, which paces its
			// own retries of retriable errors.
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			err := s.Write(ctx, b)
			cancel()
			if err == nil {
				break
			}
			failedWrites++
			t.Logf("batch %d attempt %d: %v", i, attempt, err)
			if attempt == 20 {
				t.Fatalf("batch %d still failing after %d attempts: %v", i, attempt, err)
			}
		}
		// Write said nil: every record of b must be acknowledged, so
		// readable now.
		got := byKey(t, kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns"}), false)
		for j := range b.Envelopes {
			if got[b.Envelopes[j].ID] == nil {
				t.Fatalf("batch %d: Write returned nil but record %s is not in the topic", i, b.Envelopes[j].ID)
			}
		}
	}
	for i, h := range faults {
		if h.Hits() == 0 {
			t.Errorf("fault %d never hit: the test did not exercise it", i)
		}
	}
	if swallow.Load() > 0 {
		t.Errorf("stalled requests left: %d", swallow.Load())
	}
	if failedWrites == 0 {
		t.Error("no Write failed: the refusals did not reach the caller")
	}
	recs := kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns"})
	got := byKey(t, recs, false)
	want := 0
	for _, b := range batches {
		for j := range b.Envelopes {
			want++
			if got[b.Envelopes[j].ID] == nil {
				t.Errorf("record %s lost", b.Envelopes[j].ID)
			}
		}
	}
	if len(got) != want {
		t.Errorf("%d distinct ids, want %d", len(got), want)
	}
	t.Logf("%d failed writes retried; %d records read for %d ids (duplicates: %d)", failedWrites, len(recs), want, len(recs)-want)
}

func TestWriteReturnsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.dns"))
	cfg := testConfig(c)
	cfg.RequestTimeout = time.Second
	s, _ := startSink(t, cfg, []record.Stream{{Source: "dns", Account: "acme"}}, nil)
	var stall atomic.Bool
	stall.Store(true)
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, stall.Load()
	})
	b := makeBatch(t, "dns", "acme", 0, 0, 50, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	start := time.Now()
	err := s.Write(ctx, b)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write on a stalled broker = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Write took %v to notice its deadline", d)
	}
	stall.Store(false)
	write(t, s, b) // the pipeline's retry
	got := byKey(t, kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns"}), false)
	for i := range b.Envelopes {
		if got[b.Envelopes[i].ID] == nil {
			t.Errorf("record %s missing after the retry", b.Envelopes[i].ID)
		}
	}
}

// deadLines reads the dead-letter file of dir.
func deadLines(t *testing.T, dir string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, sinkhelper.DeadLetterFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("dead-letter file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("dead-letter line is not JSON: %v: %s", err, sc.Bytes())
		}
		out = append(out, m)
	}
	return out
}

func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s is not a JSON string", raw)
	}
	return s
}

func TestRecordTooLargeGoesToTheDeadLetterFile(t *testing.T) {
	t.Parallel()
	limit := "16384"
	c := kafkatest.NewCluster(t)
	for _, topic := range []string{"svc.dns", "svc.audit_logs"} {
		if err := c.CreateTopic(topic, 1, map[string]string{"max.message.bytes": limit}); err != nil {
			t.Fatal(err)
		}
	}
	// check verifies the outcome of writing b with record big too large.
	check := func(t *testing.T, reg *prometheus.Registry, dir, topic string, b *record.Batch, big int, reason string) {
		t.Helper()
		lines := deadLines(t, dir)
		if len(lines) != 1 {
			t.Fatalf("%d dead-letter lines, want 1", len(lines))
		}
		e := &b.Envelopes[big]
		l := lines[0]
		if id := str(t, l["id"]); id != e.ID {
			t.Errorf("dead letter id %s, want %s", id, e.ID)
		}
		if got := str(t, l["topic"]); got != topic {
			t.Errorf("dead letter topic %s, want %s", got, topic)
		}
		if got := str(t, l["reason"]); !strings.Contains(got, reason) {
			t.Errorf("dead letter reason %q lacks %q", got, reason)
		}
		if got := str(t, l["time"]); got != record.FormatTime(e.Time) {
			t.Errorf("dead letter time %s", got)
		}
		if !bytes.Equal(l["record"], e.Record) {
			t.Errorf("dead letter record differs from the raw record")
		}
		got := byKey(t, kafkatest.ReadAll(t, c.ListenAddrs(), []string{topic}), false)
		for i := range b.Envelopes {
			_, ok := got[b.Envelopes[i].ID]
			if i == big && ok {
				t.Errorf("the too-large record reached the topic")
			}
			if i != big && !ok {
				t.Errorf("record %d (%s) of the batch is missing", i, b.Envelopes[i].ID)
			}
		}
		m := gather(t, reg)
		if v := m[`collector_dead_letters_total{reason="too_large",sink="kafka"}`]; v != 1 {
			t.Errorf("collector_dead_letters_total = %v, want 1", v)
		}
		if v := m[`collector_sink_records_total{sink="kafka"}`]; v != float64(len(b.Envelopes)-1) {
			t.Errorf("collector_sink_records_total = %v, want %d", v, len(b.Envelopes)-1)
		}
	}

	t.Run("topic limit known at start", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		s, dir := startSink(t, testConfig(c), []record.Stream{{Source: "dns", Account: "acme"}}, reg)
		b := makeBatch(t, "dns", "acme", 0, 0, 10, 100)
		b.Envelopes[4] = bigEnvelope(t, "dns", "acme", 4, 40_000)
		write(t, s, b)
		check(t, reg, dir, "svc.dns", b, 4, "16384-byte limit of topic svc.dns")
	})

	t.Run("topic limit learned from the refusal", func(t *testing.T) {
		// The broker does not tell its limits at start: the first Write
		// meets MESSAGE_TOO_LARGE for the whole batch, learns the limit,
		// dead-letters nothing yet and fails; the retry dead-letters only
		// the big record.
		hide := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeConfigs}, Count: -1, Err: kerr.ClusterAuthorizationFailed})
		reg := prometheus.NewRegistry()
		s, dir := startSink(t, testConfig(c), []record.Stream{{Source: "audit_logs", Account: "org"}}, reg)
		hide.Remove()
		if hide.Hits() == 0 {
			t.Fatal("the describe fault was not hit")
		}
		b := makeBatch(t, "audit_logs", "org", 0, 0, 10, 100)
		b.Envelopes[7] = bigEnvelope(t, "audit_logs", "org", 7, 40_000)
		var attempts int
		for attempts = 1; attempts <= 5; attempts++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := s.Write(ctx, b)
			cancel()
			if err == nil {
				break
			}
			t.Logf("attempt %d: %v", attempts, err)
			if !errors.Is(err, kerr.MessageTooLarge) {
				t.Fatalf("attempt %d: want MESSAGE_TOO_LARGE for the records refused in company, got %v", attempts, err)
			}
		}
		if attempts > 5 {
			t.Fatal("Write never succeeded")
		}
		check(t, reg, dir, "svc.audit_logs", b, 7, "limit of topic svc.audit_logs")
	})

	t.Run("larger than batch_max_bytes", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		cfg := testConfig(c)
		cfg.Topic = "big.{source}"
		cfg.CreateTopics = true
		cfg.BatchMaxBytes = 8192
		s, dir := startSink(t, cfg, []record.Stream{{Source: "dns", Account: "acme"}}, reg)
		b := makeBatch(t, "dns", "acme", 0, 0, 5, 100)
		b.Envelopes[0] = bigEnvelope(t, "dns", "acme", 0, 9000)
		write(t, s, b)
		check(t, reg, dir, "big.dns", b, 0, "8192-byte limit")
	})
}

func TestTLSWithTheRightCAAndRefusedWithAWrongOne(t *testing.T) {
	t.Parallel()
	ca := kafkatest.NewCA(t)
	c := kafkatest.NewCluster(t, kfake.TLS(ca.ServerTLS(t)), kfake.SeedTopics(1, "svc.dns"))
	streams := []record.Stream{{Source: "dns", Account: "acme"}}

	cfg := testConfig(c)
	cfg.TLS = tlsconfig.Config{Enabled: true, CAFile: ca.WriteCA(t, t.TempDir())}
	s, _ := startSink(t, cfg, streams, nil)
	b := makeBatch(t, "dns", "acme", 0, 0, 20, 10)
	write(t, s, b)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	recs := kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns"}, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	if len(recs) != 20 {
		t.Errorf("read %d records over TLS, want 20", len(recs))
	}

	wrong := cfg
	wrong.TLS.CAFile = kafkatest.NewCA(t).WriteCA(t, t.TempDir())
	ws, err := kafka.New(wrong, streams, t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = ws.Start(ctx)
	var unknown x509.UnknownAuthorityError
	if err == nil || !errors.As(err, &unknown) || !strings.Contains(err.Error(), "reach brokers") {
		t.Fatalf("Start with a wrong CA = %v, want a reach-brokers error wrapping x509.UnknownAuthorityError", err)
	}
	t.Logf("wrong CA: %v", err)
}

func TestSASL(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "collector", "s3cret-256"),
		kfake.Superuser("SCRAM-SHA-512", "collector512", "s3cret-512"),
		kfake.Superuser("PLAIN", "plainuser", "s3cret-plain"),
		kfake.SeedTopics(1, "svc.dns"))
	streams := []record.Stream{{Source: "dns", Account: "acme"}}
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-512\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	written := 0
	for _, tt := range []struct {
		name string
		sasl kafkasasl.Config
	}{
		{"SCRAM-SHA-256", kafkasasl.Config{Mechanism: "SCRAM-SHA-256", Username: "collector", Password: secret.New("s3cret-256")}},
		{"SCRAM-SHA-512 from a file", kafkasasl.Config{Mechanism: "SCRAM-SHA-512", Username: "collector512", PasswordFile: pwFile}},
		{"PLAIN", kafkasasl.Config{Mechanism: "PLAIN", Username: "plainuser", Password: secret.New("s3cret-plain")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(c)
			cfg.SASL = tt.sasl
			s, _ := startSink(t, cfg, streams, nil)
			write(t, s, makeBatch(t, "dns", "acme", written/10, written, 10, 10))
			written += 10
			if err := s.Ready(context.Background()); err != nil {
				t.Errorf("Ready: %v", err)
			}
		})
	}
	recs := kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns"},
		kgo.SASL(scram.Auth{User: "collector", Pass: "s3cret-256"}.AsSha256Mechanism()))
	if len(recs) != written {
		t.Errorf("read %d records, wrote %d", len(recs), written)
	}

	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run("wrong password "+mech, func(t *testing.T) {
			cfg := testConfig(c)
			cfg.SASL = kafkasasl.Config{Mechanism: mech, Username: "collector", Password: secret.New("wrong")}
			s, err := kafka.New(cfg, streams, t.TempDir(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			err = s.Start(ctx)
			// Kafka answers SASL_AUTHENTICATION_FAILED and closes the
			// connection; kfake just closes it (EOF).
			if err == nil || !(errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, io.EOF)) ||
				!strings.Contains(err.Error(), "sink.kafka.sasl") {
				t.Fatalf("Start with a wrong password = %v, want a refusal that points at sink.kafka.sasl", err)
			}
			t.Logf("wrong password: %v", err)
			if strings.Contains(err.Error(), "wrong") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

func TestTopicsAreCheckedOrCreatedAtStart(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(2, "svc.dns"))
	streams := []record.Stream{{Source: "dns", Account: "acme"}, {Source: "dns", Account: "Beta Corp"}}

	t.Run("created with the requested partitions", func(t *testing.T) {
		cfg := testConfig(c)
		cfg.Topic = "svc.{source}.{account}"
		cfg.CreateTopics, cfg.Partitions = true, 4
		s, _ := startSink(t, cfg, streams, nil)
		for _, topic := range []string{"svc.dns.acme", "svc.dns.Beta_Corp"} {
			if n := len(c.PartitionInfos(topic)); n != 4 {
				t.Errorf("topic %s has %d partitions, want 4", topic, n)
			}
		}
		// A stream New was not told about gets its topic on first sight.
		b := makeBatch(t, "audit_logs", "org", 0, 0, 5, 10)
		write(t, s, b)
		if n := len(c.PartitionInfos("svc.audit_logs.org")); n != 4 {
			t.Errorf("topic made by Write has %d partitions, want 4", n)
		}
		if recs := kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.audit_logs.org"}); len(recs) != 5 {
			t.Errorf("read %d records, want 5", len(recs))
		}
	})

	t.Run("missing is an error naming the topic", func(t *testing.T) {
		cfg := testConfig(c)
		cfg.Topic = "missing.{source}"
		s, err := kafka.New(cfg, streams, t.TempDir(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(context.Background())
		err = s.Start(context.Background())
		if err == nil {
			t.Fatal("Start succeeded without the topic")
		}
		for _, want := range []string{`topic "missing.dns" does not exist`, "dns/acme", "sink.kafka.create_topics"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if c.TopicInfo("missing.dns") != nil {
			t.Error("Start created the topic although create_topics is off")
		}
	})

	t.Run("missing for a new stream fails its Write", func(t *testing.T) {
		s, _ := startSink(t, testConfig(c), streams, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := s.Write(ctx, makeBatch(t, "connections", "acme", 0, 0, 3, 10))
		if err == nil || !strings.Contains(err.Error(), `topic "svc.connections" does not exist`) {
			t.Fatalf("Write to a missing topic = %v", err)
		}
	})
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.dns"))
	ctx := context.Background()
	s, err := kafka.New(testConfig(c), []record.Stream{{Source: "dns", Account: "acme"}}, t.TempDir(), prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := makeBatch(t, "dns", "acme", 0, 0, 3, 10)
	if err := s.Write(ctx, b); err == nil {
		t.Error("Write before Start succeeded")
	}
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready before Start")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err == nil {
		t.Error("second Start succeeded")
	}
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
	if err := s.Write(ctx, &record.Batch{Source: "dns", Account: "acme"}); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	if err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if err := s.Write(ctx, b); err == nil {
		t.Error("Write after Shutdown succeeded")
	}
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready after Shutdown")
	}

	never, err := kafka.New(testConfig(c), nil, t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := never.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown without Start: %v", err)
	}
	if err := never.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown without Start: %v", err)
	}
	if err := never.Start(ctx); err == nil {
		t.Error("Start after Shutdown succeeded")
	}
}

func TestCheckReportsClusterAndTopics(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.NumBrokers(2), kfake.SeedTopics(3, "svc.dns"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cfg := testConfig(c)
	streams := []record.Stream{{Source: "dns", Account: "acme"}, {Source: "dns", Account: "beta"}, {Source: "connections", Account: "acme"}}

	rep, err := kafka.Check(ctx, cfg, streams)
	if err == nil || !strings.Contains(err.Error(), `topic "svc.connections" does not exist`) {
		t.Fatalf("Check = %v, want the missing svc.connections", err)
	}
	if len(rep.Brokers) != 2 || rep.ClusterID == "" {
		t.Errorf("brokers %v, cluster %q", rep.Brokers, rep.ClusterID)
	}
	if len(rep.Topics) != 2 || rep.Topics[1].Topic != "svc.dns" || !rep.Topics[1].Exists || rep.Topics[1].Partitions != 3 ||
		len(rep.Topics[1].Streams) != 2 || rep.Topics[1].MaxMessageBytes <= 0 || rep.Topics[0].Exists {
		t.Errorf("topics %+v", rep.Topics)
	}
	t.Logf("report:\n%s", rep)

	cfg.CreateTopics = true
	rep, err = kafka.Check(ctx, cfg, streams)
	if err != nil || !rep.Topics[0].WillCreate {
		t.Errorf("with create_topics: %v, %+v", err, rep.Topics)
	}
	if c.TopicInfo("svc.connections") != nil {
		t.Error("Check created a topic")
	}

	down := kafka.DefaultConfig()
	down.Brokers = []string{"127.0.0.1:1"}
	down.RequestTimeout = time.Second
	short, cancel2 := context.WithTimeout(ctx, 3*time.Second)
	defer cancel2()
	if _, err := kafka.Check(short, down, streams); err == nil || !strings.Contains(err.Error(), "reach brokers 127.0.0.1:1") {
		t.Errorf("Check of a closed port = %v", err)
	}
}

// TestKcatReadsWhatTheSinkWrote checks the records with another client
// family: Debian's kcat (librdkafka), as CI does. It fails when kcat is
// not installed.
func TestKcatReadsWhatTheSinkWrote(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not installed: scripts/test.sh installs it (apt-get install -y kcat)")
	}
	c := kafkatest.NewCluster(t, kfake.SeedTopics(2, "svc.dns"))
	s, _ := startSink(t, testConfig(c), []record.Stream{{Source: "dns", Account: "acme"}}, nil)
	b := makeBatch(t, "dns", "acme", 0, 0, 50, 20)
	write(t, s, b)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, "-C", "-b", strings.Join(c.ListenAddrs(), ","), "-t", "svc.dns",
		"-o", "beginning", "-e", "-q", "-f", "%k\t%h\t%s\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	want := map[string]*record.Envelope{}
	for i := range b.Envelopes {
		want[b.Envelopes[i].ID] = &b.Envelopes[i]
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(b.Envelopes) {
		t.Fatalf("kcat read %d records, want %d:\n%s", len(lines), len(b.Envelopes), out)
	}
	for _, l := range lines {
		parts := strings.SplitN(l, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("kcat line %q", l)
		}
		e := want[parts[0]]
		if e == nil {
			t.Fatalf("kcat key %q is no id of the batch", parts[0])
		}
		if parts[2] != string(e.AppendJSON(nil)) {
			t.Errorf("kcat value of %s:\n got %s\nwant %s", e.ID, parts[2], e.AppendJSON(nil))
		}
		for _, h := range []string{"source=dns", "account=acme", "time=" + record.FormatTime(e.Time), "content-type=application/json"} {
			if !strings.Contains(parts[1], h) {
				t.Errorf("kcat headers %q lack %q", parts[1], h)
			}
		}
		delete(want, parts[0])
	}
}

func TestConcurrentWritesDeliverEveryRecord(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(4, "svc.dns", "svc.connections"))
	s, _ := startSink(t, testConfig(c), nil, nil)
	var batches []*record.Batch
	for w := range 8 {
		src := []string{"dns", "connections"}[w%2]
		for p := range 5 {
			batches = append(batches, makeBatch(t, src, "acct-"+string(rune('a'+w)), p, p*100, 100, 20))
		}
	}
	errs := make(chan error, len(batches))
	work := make(chan *record.Batch)
	for range 8 {
		go func() {
			for b := range work {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				errs <- s.Write(ctx, b)
				cancel()
			}
		}()
	}
	for _, b := range batches {
		work <- b
	}
	close(work)
	for range batches {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	got := byKey(t, kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns", "svc.connections"}), true)
	for _, b := range batches {
		for i := range b.Envelopes {
			if got[b.Envelopes[i].ID] == nil {
				t.Fatalf("record %s missing", b.Envelopes[i].ID)
			}
		}
	}
	if len(got) != 4000 {
		t.Errorf("read %d records, want 4000", len(got))
	}
}

func TestShutdownKeepsItsDeadlineWhileTheBrokerStalls(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "svc.dns"))
	var stall atomic.Bool
	stall.Store(true)
	arrived := make(chan struct{}, 1)
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case arrived <- struct{}{}:
		default:
		}
		return nil, nil, stall.Load()
	})
	s, err := kafka.New(testConfig(c), []record.Stream{{Source: "dns", Account: "acme"}}, t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	written := make(chan error, 1)
	go func() { written <- s.Write(context.Background(), makeBatch(t, "dns", "acme", 0, 0, 20, 10)) }()
	select { // the records reached the stalled broker
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no produce request arrived")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Shutdown(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with unacknowledged records = %v, want a flush deadline error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Shutdown took %v with a 500ms deadline", d)
	}
	select {
	case err := <-written:
		if err == nil {
			t.Error("Write returned nil although the broker never acknowledged")
		}
		t.Logf("stalled Write after Shutdown: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Write still blocked 5 s after Shutdown")
	}
	stall.Store(false)
}
