package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/svcexport/collector/internal/secret"
)

// codec maps a Config.Compression name to franz-go's codec. zstd runs at
// its fastest level (klauspost zstd.SpeedFastest = 1): on envelopes it
// compressed as well as the default level (7.2x) for 25% less CPU in
// BenchmarkWrite.
func codec(name string) (kgo.CompressionCodec, bool) {
	switch name {
	case "zstd":
		return kgo.ZstdCompression().WithLevel(1), true
	case "lz4":
		return kgo.Lz4Compression(), true
	case "snappy":
		return kgo.SnappyCompression(), true
	case "gzip":
		return kgo.GzipCompression(), true
	case "none":
		return kgo.NoCompression(), true
	}
	return kgo.CompressionCodec{}, false
}

// connOpts are the options every client of this package needs to reach the
// cluster: seeds, client id, timeouts, TLS, SASL and logging. The producer
// adds its own in producerOpts.
func connOpts(cfg Config, tc *tls.Config, mech sasl.Mechanism, log *slog.Logger) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.RequestTimeoutOverhead(cfg.RequestTimeout),
		kgo.WithLogger(slogAdapter{log: log}),
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts
}

// producerOpts are the producer settings of Config. Idempotent writes stay
// on (franz-go's default); acks are all ISRs, which idempotency requires.
// limit gives the batch cap per topic.
func producerOpts(cfg Config, limit func(topic string) int32) []kgo.Opt {
	c, _ := codec(cfg.Compression)
	opts := []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(c),
		kgo.ProducerLinger(cfg.Linger),
		kgo.ProducerBatchMaxBytesFn(limit),
		kgo.MaxBufferedRecords(cfg.MaxBufferedRecords),
		kgo.ProduceRequestTimeout(cfg.RequestTimeout),
	}
	if cfg.MaxBufferedBytes > 0 {
		opts = append(opts, kgo.MaxBufferedBytes(cfg.MaxBufferedBytes))
	}
	if cfg.DeliveryTimeout > 0 {
		opts = append(opts, kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout))
	}
	switch cfg.Partitioner {
	case PartitionByAccount:
		opts = append(opts, kgo.RecordPartitioner(kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
			return accountPartition
		})))
	default:
		// nil hasher: murmur2 like Kafka's Java client, so other producers
		// of the same keys agree on partitions.
		opts = append(opts, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	}
	return opts
}

// accountPartition puts every record of one account on one partition: FNV-1a
// of the account header modulo the partition count.
func accountPartition(r *kgo.Record, n int) int {
	h := fnv.New32a()
	for i := range r.Headers {
		if r.Headers[i].Key == HeaderAccount {
			h.Write(r.Headers[i].Value)
			break
		}
	}
	return int(h.Sum32() % uint32(n))
}

// tlsConfig builds the client TLS configuration, reading the files now so
// that a bad path is reported by New with its key.
func tlsConfig(c TLSConfig) (*tls.Config, error) {
	if !c.Enabled {
		return nil, nil
	}
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // opt-in for tests, warned about at Start
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s.tls.ca_file: %w", prefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s.tls.ca_file: %s holds no PEM certificate", prefix, c.CAFile)
		}
		tc.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s.tls.cert_file/key_file: %w", prefix, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// saslMechanism builds the SASL mechanism, resolving the password (inline
// wins over the file).
func saslMechanism(c SASLConfig) (sasl.Mechanism, error) {
	if c.Mechanism == "" {
		return nil, nil
	}
	pw, err := secret.Resolve(c.Password.Reveal(), c.PasswordFile)
	if err != nil {
		return nil, fmt.Errorf("%s.sasl.password_file: %w", prefix, err)
	}
	if !pw.IsSet() {
		return nil, fmt.Errorf("%s.sasl.password: empty (from %s.sasl.password_file %s)", prefix, prefix, c.PasswordFile)
	}
	switch c.Mechanism {
	case "PLAIN":
		return plain.Auth{User: c.Username, Pass: pw.Reveal()}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: c.Username, Pass: pw.Reveal()}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: c.Username, Pass: pw.Reveal()}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("%s.sasl.mechanism: unknown mechanism %q", prefix, c.Mechanism)
}

// slogAdapter sends franz-go's log lines to slog, tagged component=kafka.
// franz-go logs at warn level and above unless the logger has debug
// enabled; its info level is one line per connection and metadata refresh.
type slogAdapter struct{ log *slog.Logger }

func (a slogAdapter) Level() kgo.LogLevel {
	if a.log.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelInfo
	}
	return kgo.LogLevelWarn
}

func (a slogAdapter) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	l := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	case kgo.LogLevelInfo:
		l = slog.LevelDebug // franz-go's info is chatty; keep it below the daemon's info
	}
	a.log.Log(context.Background(), l, "kafka client: "+msg, append([]any{"component", "kafka"}, keyvals...)...)
}
