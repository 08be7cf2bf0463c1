package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
)

// conn is what New and Check take from a Config: the topic template, the
// TLS configuration and the SASL mechanism, every file read, and the
// scrubber that knows the secrets of the mechanism.
type conn struct {
	tmpl  topicTemplate
	tls   *tls.Config
	mech  sasl.Mechanism
	scrub *secret.Scrubber
}

// prepare validates cfg and reads its files; an error names the key. log
// receives the SASL mechanism's warnings (a failed token refresh). scr is
// the process's secret scrubber, which learns the SASL secrets; nil makes
// one of those alone. credSource, when not nil, is told where each
// AWS_MSK_IAM authentication took its credentials (kafkasasl.Options).
func prepare(cfg Config, log *slog.Logger, scr *secret.Scrubber, credSource func(string)) (conn, error) {
	if err := cfg.Validate(); err != nil {
		return conn{}, err
	}
	tmpl, _ := parseTopicTemplate(cfg.Topic) // Validate checked it
	tc, err := cfg.TLS.Build()
	if err != nil {
		return conn{}, fmt.Errorf("%s.tls.%w", prefix, err)
	}
	if scr == nil {
		scr = secret.NewScrubber()
	}
	mech, err := cfg.SASL.Build(kafkasasl.Options{Prefix: prefix + ".sasl", Brokers: cfg.Brokers, Log: log, TokenTimeout: cfg.RequestTimeout, Scrubber: scr, CredentialSource: credSource})
	if err != nil {
		return conn{}, err
	}
	return conn{tmpl: tmpl, tls: tc, mech: mech, scrub: scr}, nil
}

// warnings are the settings of cfg that work but deserve a look: Start
// logs them, Check reports them.
func warnings(cfg Config) []string {
	var w []string
	if cfg.TLS.InsecureSkipVerify {
		w = append(w, "TLS certificate verification is off ("+prefix+".tls.insecure_skip_verify): anyone on the path can read and alter what the collector sends")
	}
	switch {
	case cfg.TLS.Enabled:
	case cfg.SASL.Mechanism == kafkasasl.Plain:
		w = append(w, "SASL PLAIN without TLS sends the password in clear text ("+prefix+".tls.enabled is false)")
	case cfg.SASL.Mechanism == kafkasasl.OAuthBearer:
		w = append(w, "SASL OAUTHBEARER without TLS sends the bearer token in clear text ("+prefix+".tls.enabled is false)")
	case cfg.SASL.Mechanism == kafkasasl.AWSMSKIAM:
		w = append(w, "SASL AWS_MSK_IAM without TLS: Amazon MSK accepts IAM authentication only over TLS (port 9098); set "+prefix+".tls.enabled")
	}
	if u := cfg.SASL.OAuth.TokenURL; cfg.SASL.Mechanism == kafkasasl.OAuthBearer && strings.HasPrefix(strings.ToLower(u), "http://") {
		w = append(w, "the OAuth token URL ("+prefix+".sasl.oauth.token_url) is plain http: the client secret and the tokens travel in clear text")
	}
	return w
}

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
func connOpts(cfg Config, cn conn, log *slog.Logger) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.RequestTimeoutOverhead(cfg.RequestTimeout),
		kgo.WithLogger(slogAdapter{log: log, scrub: cn.scrub}),
	}
	if cn.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(cn.tls))
	}
	if cn.mech != nil {
		opts = append(opts, kgo.SASL(cn.mech))
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
	// No kgo.RecordDeliveryTimeout: franz-go counts it from the record's
	// timestamp, which is the record time (Config.Timestamp); the sink
	// bounds a Write's produce by DeliveryTimeout instead (push).
	if cfg.TransactionalID != "" {
		opts = append(opts, kgo.TransactionalID(cfg.TransactionalID))
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
		if r.Headers[i].Key == kafkarecord.HeaderAccount {
			h.Write(r.Headers[i].Value)
			break
		}
	}
	return int(h.Sum32() % uint32(n))
}

// slogAdapter sends franz-go's log lines to slog, tagged component=kafka.
// franz-go logs at warn level and above unless the logger has debug
// enabled; its info level is one line per connection and metadata refresh.
// Errors and strings pass the scrubber: franz-go logs a failed SASL
// authentication with its error, which may hold a token endpoint's or a
// broker's words.
type slogAdapter struct {
	log   *slog.Logger
	scrub *secret.Scrubber
}

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
	args := make([]any, 0, 2+len(keyvals))
	args = append(args, "component", "kafka")
	for _, v := range keyvals {
		switch x := v.(type) {
		case error:
			v = a.scrub.Error(x)
		case string:
			v = a.scrub.Scrub(x)
		}
		args = append(args, v)
	}
	a.log.Log(context.Background(), l, "kafka client: "+a.scrub.Scrub(msg), args...)
}
