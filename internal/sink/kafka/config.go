package kafka

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
	"github.com/svcexport/collector/internal/tlsconfig"
)

// Values of Config.Format.
const (
	// FormatEnvelope writes the C7 envelope as one JSON object per value.
	FormatEnvelope = "envelope"
	// FormatRecord writes the raw record as the value and the envelope's
	// other fields as headers only.
	FormatRecord = "record"
	// FormatOCSF writes the record's OCSF 1.3.0 event as the value
	// (package ocsf, docs/ocsf.md); key and headers as in the other
	// formats, content-type kafkarecord.ContentTypeOCSF.
	FormatOCSF = "ocsf"
)

// Values of Config.Partitioner.
const (
	// PartitionByKey hashes the record id (the key) like Kafka's Java
	// client (murmur2), spreading every stream over all partitions.
	PartitionByKey = "key"
	// PartitionByAccount hashes the account name, so that all records of
	// one account land in one partition of each topic (per-account order
	// for consumers, at the cost of balance).
	PartitionByAccount = "account"
)

// Defaults of Config. The producer tunables come from BenchmarkWrite
// (bench_test.go): four writers of 5,000-envelope pages, about 900 bytes per
// envelope, on a 2-core machine shared with other work.
const (
	DefaultClientID           = "svc-collector"
	DefaultTopic              = "svc.{source}"
	DefaultCompression        = "zstd"
	DefaultLinger             = 10 * time.Millisecond
	DefaultBatchMaxBytes      = 1_000_012 // Kafka's max.message.bytes default and franz-go's
	DefaultMaxBufferedRecords = 50_000
	DefaultMaxBufferedBytes   = 128 << 20
	DefaultRequestTimeout     = 10 * time.Second
	DefaultDeliveryTimeout    = time.Minute
	DefaultPartitions         = 3
	DefaultReplicationFactor  = -1
)

// Config is the configuration of the Kafka sink (keys under sink.kafka).
// Build it with DefaultConfig and override; the zero value is not valid.
type Config struct {
	// Brokers are the seed brokers, host:port each. Required.
	Brokers []string `koanf:"brokers"`
	// ClientID is the Kafka client id (broker logs, quotas). Default
	// "svc-collector".
	ClientID string `koanf:"client_id"`
	// Topic is the topic name template: {source} and {account} are
	// replaced by the stream's source and account; characters a topic name
	// cannot hold (anything but ASCII letters, digits, '.', '_' and '-')
	// become '_'. Default "svc.{source}" (one topic per source; the account
	// is in a header). {tenant} is the stream's tenant (docs/tenants.md;
	// "default" for the one-tenant form); without it, tenants share a
	// topic and a record's tenant is in the envelope and the header tenant.
	Topic string `koanf:"topic"`
	// Format is what a record's value holds: "envelope" (the C7 envelope
	// JSON, default), "record" (the raw record as the API sent it; the
	// other envelope fields are in the headers either way) or "ocsf" (the
	// record's OCSF 1.3.0 event, its metadata.uid the record id).
	Format string `koanf:"format"`
	// OCSF shapes the events of format "ocsf" (keys under
	// sink.kafka.ocsf).
	OCSF ocsfenc.Config `koanf:"ocsf"`
	// Compression is the batch codec: zstd (default, at its fastest level),
	// lz4, snappy, gzip or none. In BenchmarkWrite (bytes on the wire per
	// envelope, producer CPU-seconds per million envelopes): zstd 127 B and
	// 3.4 s, gzip 136 B and 5.4 s, lz4 212 B and 3.3-3.6 s, snappy 227 B
	// and 2.3 s, none 920 B and 2.0 s. zstd keeps a broker's disk and
	// network at a seventh of the raw size for about 1.4 s of CPU per
	// million records; every consumer since Kafka 2.1 (and kcat) reads it.
	Compression string `koanf:"compression"`
	// Acks is the acknowledgement the producer waits for. Only "all" is
	// accepted: the idempotent producer, which the sink never turns off
	// (stable delivery order and no duplicates from its own retries),
	// requires it. Default "all".
	Acks string `koanf:"acks"`
	// Delivery is "exactly_once" (default): after a crash the sink reads
	// back what its partitions hold past the checkpoint's mark and does
	// not write those records again, so the log holds each record once;
	// or "at_least_once": a crash between a write and the checkpoint
	// commit writes those records again (the same keys and ids).
	Delivery string `koanf:"delivery"`
	// Timestamp is what the message timestamp holds: "record" (default),
	// the record time (C7), so that time-based retention, offsetsForTimes
	// and time partitioners downstream see when the event happened, also
	// in a backfill; or "fetched", when its page was fetched. With
	// "record", a backfill older than the topic's retention.ms is deleted
	// by the broker as soon as it is written, and a broker with
	// log.message.timestamp.before.max.ms refuses records older than it.
	Timestamp string `koanf:"timestamp"`
	// Key is what the message key holds for the sources Keys does not
	// name: "id" (default), the record id (C7), spread evenly over the
	// partitions; or "entity", the record's account and entity
	// (kafkarecord.EntityKey: "acme/4211" for agent 4211 of account acme;
	// the entity per source is kafkarecord.Entity: the alert uuid of an
	// edge alert, the agent mid of agent info, the user of a login, the
	// FQDN of a DNS record...), so that one entity's records go to one
	// partition in order and a compacted topic keeps the latest of each;
	// the id then travels in the header "id". An entity is unique only
	// within its account, hence the account in the key. A record without
	// its entity member keeps its id as the key.
	Key string `koanf:"key"`
	// Keys sets Key per source, winning over Key. Default agent_info and
	// edge_alerts "entity": their records are states (an agent's latest
	// report, an alert's latest version) that a compacted topic should
	// keep one of per agent or alert. Event streams (dns, connections,
	// logins...) are best keyed by id: their entities (a FQDN, an event
	// type) are few and skewed, so entity keys crowd a few partitions, and
	// compaction would drop all but one event of each.
	Keys map[string]string `koanf:"keys"`
	// Linger is how long a partition waits for more records before a
	// request is sent. Write stops lingering for its partitions once the
	// whole batch is buffered (franz-go ProduceSync), so a linger only lets
	// one page fill its record batches before they leave and adds no
	// latency. 0, 10ms and 50ms were within noise of each other over
	// loopback; 10ms keeps a page in full batches where round trips are
	// real. Default 10ms.
	Linger time.Duration `koanf:"linger"`
	// BatchMaxBytes bounds one record batch before compression (Kafka's
	// max.message.bytes). The sink lowers it per topic to the topic's
	// max.message.bytes when the broker tells it (a conservative cap: the
	// broker compares the compressed size). A record that alone does not
	// fit goes to the dead-letter file. 256 KiB, 1 MB and 4 MB batches ran
	// alike in BenchmarkWrite; the default is Kafka's own. Default
	// 1,000,012.
	BatchMaxBytes int `koanf:"batch_max_bytes"`
	// MaxBufferedRecords bounds the records the producer holds unacknowledged;
	// Write blocks (within its context) when it is reached. Default 50,000.
	MaxBufferedRecords int `koanf:"max_buffered_records"`
	// MaxBufferedBytes bounds the bytes (keys, values, headers) the producer
	// holds unacknowledged; 0 means no byte bound. It must be at least
	// BatchMaxBytes. Default 128 MiB.
	MaxBufferedBytes int `koanf:"max_buffered_bytes"`
	// RequestTimeout is how long a broker has to answer a produce request
	// (and the connection deadline added on top for every request), and
	// how long an OAuth token endpoint has to answer (sasl.oauth.token_url).
	// Default 10s.
	RequestTimeout time.Duration `koanf:"request_timeout"`
	// DeliveryTimeout bounds how long a Write's records may wait in the
	// producer before they fail (the produce's context; franz-go fails
	// only records whose failing cannot break idempotency). The failed
	// Write is retried by the pipeline. 0 means no bound. Default 1m, under
	// the pipeline's sink_timeout, so an unreachable cluster surfaces as a
	// produce error.
	DeliveryTimeout time.Duration `koanf:"delivery_timeout"`
	// Partitioner is "key" (default: hash of the record id) or "account"
	// (hash of the account: one account, one partition).
	Partitioner string `koanf:"partitioner"`
	// CreateTopics makes Start create the missing topics of the configured
	// streams with Partitions and ReplicationFactor. Default false: a
	// missing topic is an error at Start.
	CreateTopics bool `koanf:"create_topics"`
	// Partitions of created topics; -1 takes the broker's num.partitions.
	// Default 3.
	Partitions int `koanf:"partitions"`
	// ReplicationFactor of created topics; -1 takes the broker's
	// default.replication.factor. Default -1.
	ReplicationFactor int `koanf:"replication_factor"`
	// TLS configures encryption to the brokers (keys under
	// sink.kafka.tls); empty ca_file means the system roots, server_name
	// defaults to the host of each broker address.
	TLS tlsconfig.Config `koanf:"tls"`
	// SASL configures authentication to the brokers (keys under
	// sink.kafka.sasl; package kafkasasl).
	SASL kafkasasl.Config `koanf:"sasl"`

	// Transactions (issue 22; kept apart from the record keys above).

	// TransactionalID, when set (delivery exactly_once only), makes the
	// producer transactional: each Write is one transaction, so a
	// read_committed consumer sees a batch whole or not at all, and Recover
	// fences the id first (any open transaction of a dead process is
	// aborted). Empty (default): the idempotent producer without
	// transactions; the read-back of delivery exactly_once still keeps the
	// log at each record once. Two collectors must never share an id: the
	// one that starts fences the other. The brokers must allow transactions
	// and the principal needs WRITE and DESCRIBE on the transactional id
	// (and IDEMPOTENT_WRITE on the cluster for brokers before 3.0).
	TransactionalID string `koanf:"transactional_id"`
}

// DefaultConfig returns the documented defaults. Brokers is empty and must
// be set.
func DefaultConfig() Config {
	return Config{
		ClientID:           DefaultClientID,
		Topic:              DefaultTopic,
		Format:             FormatEnvelope,
		OCSF:               ocsfenc.DefaultConfig(),
		Compression:        DefaultCompression,
		Acks:               "all",
		Delivery:           sink.DeliveryExactlyOnce,
		Timestamp:          TimestampRecord,
		Key:                KeyID,
		Keys:               map[string]string{"agent_info": KeyEntity, "edge_alerts": KeyEntity},
		Linger:             DefaultLinger,
		BatchMaxBytes:      DefaultBatchMaxBytes,
		MaxBufferedRecords: DefaultMaxBufferedRecords,
		MaxBufferedBytes:   DefaultMaxBufferedBytes,
		RequestTimeout:     DefaultRequestTimeout,
		DeliveryTimeout:    DefaultDeliveryTimeout,
		Partitioner:        PartitionByKey,
		Partitions:         DefaultPartitions,
		ReplicationFactor:  DefaultReplicationFactor,
	}
}

// codecNames lists the accepted compression names in the order error
// messages show them.
var codecNames = []string{"zstd", "lz4", "snappy", "gzip", "none"}

// Values of Config.Key.
const (
	KeyID     = "id"
	KeyEntity = "entity"
)

// Values of Config.Timestamp.
const (
	TimestampRecord  = "record"
	TimestampFetched = "fetched"
)

// KeyOf returns what the message key of source's records holds: Keys'
// value for it, else Key.
func (c Config) KeyOf(source string) string {
	if k, ok := c.Keys[source]; ok {
		return k
	}
	return c.Key
}

// entityKeys returns the sources keyed by entity (kafkarecord.Encoder).
func (c Config) entityKeys() map[string]bool {
	out := map[string]bool{}
	for _, src := range kafkarecord.EntitySources() {
		if c.KeyOf(src) == KeyEntity {
			out[src] = true
		}
	}
	return out
}

// prefix is the configuration path of this section.
const prefix = "sink.kafka"

// Validate reports every invalid key, naming it
// (sink.kafka.compression: unknown codec "zip" (zstd, lz4, snappy, gzip,
// none)), joined with errors.Join; nil when c is usable.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", prefix, key, fmt.Sprintf(format, args...)))
	}
	if len(c.Brokers) == 0 {
		add("brokers", "must list at least one broker (host:port)")
	}
	for i, b := range c.Brokers {
		if err := checkHostPort(b); err != nil {
			add("brokers", "entry %d: %v", i, err)
		}
	}
	if c.ClientID == "" {
		add("client_id", "must not be empty")
	}
	if _, err := parseTopicTemplate(c.Topic); err != nil {
		add("topic", "%v", err)
	}
	switch c.Format {
	case FormatEnvelope, FormatRecord, FormatOCSF:
	default:
		add("format", "unknown format %q (%s, %s, %s)", c.Format, FormatEnvelope, FormatRecord, FormatOCSF)
	}
	if err := c.OCSF.Validate(prefix + ".ocsf"); err != nil {
		errs = append(errs, err)
	}
	if _, ok := codec(c.Compression); !ok {
		add("compression", "unknown codec %q (%s)", c.Compression, strings.Join(codecNames, ", "))
	}
	if c.Acks != "all" {
		add("acks", "%q is not supported: the idempotent producer, which this sink never disables, needs acks=all (the only accepted value is \"all\")", c.Acks)
	}
	if c.Key != KeyID && c.Key != KeyEntity {
		add("key", "unknown value %q (%s, %s)", c.Key, KeyID, KeyEntity)
	}
	for _, src := range slices.Sorted(maps.Keys(c.Keys)) {
		switch v := c.Keys[src]; {
		case !slices.Contains(kafkarecord.EntitySources(), src):
			add("keys."+src, "unknown source %q (%s)", src, strings.Join(kafkarecord.EntitySources(), ", "))
		case v != KeyID && v != KeyEntity:
			add("keys."+src, "unknown value %q (%s, %s)", v, KeyID, KeyEntity)
		}
	}
	if c.Timestamp != TimestampRecord && c.Timestamp != TimestampFetched {
		add("timestamp", "unknown value %q (%s, %s)", c.Timestamp, TimestampRecord, TimestampFetched)
	}
	if c.Delivery != sink.DeliveryExactlyOnce && c.Delivery != sink.DeliveryAtLeastOnce {
		add("delivery", "unknown mode %q (%s, %s)", c.Delivery, sink.DeliveryExactlyOnce, sink.DeliveryAtLeastOnce)
	}
	if c.TransactionalID != "" && c.Delivery != sink.DeliveryExactlyOnce {
		add("transactional_id", "needs %s.delivery %s (got %q): transactions only serve the exactly-once read-back", prefix, sink.DeliveryExactlyOnce, c.Delivery)
	}
	if c.Linger < 0 || c.Linger > time.Minute {
		add("linger", "must be between 0 and 1m, got %v", c.Linger)
	}
	if c.BatchMaxBytes < 1024 || c.BatchMaxBytes > math.MaxInt32 {
		add("batch_max_bytes", "must be between 1024 and %d, got %d", math.MaxInt32, c.BatchMaxBytes)
	}
	if c.MaxBufferedRecords < 1 {
		add("max_buffered_records", "must be at least 1, got %d", c.MaxBufferedRecords)
	}
	if c.MaxBufferedBytes < 0 {
		add("max_buffered_bytes", "must be 0 (no bound) or positive, got %d", c.MaxBufferedBytes)
	} else if c.MaxBufferedBytes > 0 && c.MaxBufferedBytes < c.BatchMaxBytes {
		add("max_buffered_bytes", "%d is below %s.batch_max_bytes (%d): a record that fits a batch could never be buffered", c.MaxBufferedBytes, prefix, c.BatchMaxBytes)
	}
	if c.RequestTimeout <= 0 {
		add("request_timeout", "must be positive, got %v", c.RequestTimeout)
	}
	if c.DeliveryTimeout < 0 {
		add("delivery_timeout", "must be 0 (no bound) or positive, got %v", c.DeliveryTimeout)
	}
	switch c.Partitioner {
	case PartitionByKey, PartitionByAccount:
	default:
		add("partitioner", "unknown partitioner %q (%s, %s)", c.Partitioner, PartitionByKey, PartitionByAccount)
	}
	if c.Partitions != -1 && (c.Partitions < 1 || c.Partitions > math.MaxInt32) {
		add("partitions", "must be -1 (broker default) or at least 1, got %d", c.Partitions)
	}
	if c.ReplicationFactor != -1 && (c.ReplicationFactor < 1 || c.ReplicationFactor > math.MaxInt16) {
		add("replication_factor", "must be -1 (broker default) or between 1 and %d, got %d", math.MaxInt16, c.ReplicationFactor)
	}
	if err := c.TLS.Validate(prefix + ".tls"); err != nil {
		errs = append(errs, err)
	}
	if err := c.SASL.Validate(prefix + ".sasl"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkHostPort accepts host:port with a non-empty host and a port in
// 1..65535.
func checkHostPort(s string) error {
	if s == "" {
		return errors.New("empty broker address (write host:port)")
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port (write e.g. kafka-1:9092)", s)
	}
	if host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q has an invalid port %q", s, port)
	}
	return nil
}
