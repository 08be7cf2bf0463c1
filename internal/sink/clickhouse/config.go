package clickhouse

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/clickhouse/schema"
	"github.com/svcexport/collector/internal/tlsconfig"
)

// Protocols and compression codecs Config accepts.
const (
	ProtocolNative = "native"
	ProtocolHTTP   = "http"

	CompressionLZ4  = "lz4"
	CompressionZSTD = "zstd"
	CompressionNone = "none"
)

// Defaults of Config.
const (
	DefaultDatabase       = "svc"
	DefaultUsername       = "default"
	DefaultBatchRows      = 10_000
	DefaultBatchBytes     = 4 << 20
	DefaultFlushInterval  = time.Second
	DefaultDialTimeout    = 10 * time.Second
	DefaultQueryTimeout   = time.Minute
	DefaultMaxOpenConns   = 8
	DefaultInsertAttempts = 3

	// MaxBatchRows bounds batch_rows: ClickHouse advises 10,000 to 100,000
	// rows an insert; a million rows of a few KB each is already gigabytes
	// held in memory.
	MaxBatchRows = 1_000_000
	// MinBatchBytes and MaxBatchBytes bound batch_bytes.
	MinBatchBytes = 64 << 10
	MaxBatchBytes = 1 << 30
)

// Config is the configuration of the ClickHouse sink (keys under
// sink.clickhouse). Build it with DefaultConfig and override; the zero value
// is not valid.
type Config struct {
	// Addr lists the servers as host:port, tried in order. Empty means
	// 127.0.0.1 at the protocol's default port (native 9000, or 9440 with
	// TLS; http 8123, or 8443 with TLS).
	Addr []string `koanf:"addr"`
	// Protocol is "native" (default) or "http".
	Protocol string `koanf:"protocol"`
	// Database holds the tables; Start creates it when missing. Default
	// "svc".
	Database string `koanf:"database"`
	// Username and Password authenticate; Password wins over PasswordFile
	// (a file holding the password, one trailing newline trimmed). Default
	// user "default", no password.
	Username     string        `koanf:"username"`
	Password     secret.Secret `koanf:"password"`
	PasswordFile string        `koanf:"password_file"`
	// TablePrefix is put before every table and view name (e.g. "svc_"
	// gives svc_dns). Default "".
	TablePrefix string `koanf:"table_prefix"`
	// TLS configures an encrypted connection (keys under
	// sink.clickhouse.tls); empty ca_file means the system roots. Default
	// off.
	TLS tlsconfig.Config `koanf:"tls"`
	// Compression of the data on the wire: "lz4" (default), "zstd" or
	// "none".
	Compression string `koanf:"compression"`
	// BatchRows is the most rows one insert gathers from the batches handed
	// to Write; a batch with more is inserted in parts. ClickHouse advises
	// 10,000 to 100,000 rows an insert. Default 10,000.
	BatchRows int `koanf:"batch_rows"`
	// BatchBytes is the most bytes one insert gathers (the records and
	// their typed columns, uncompressed); a batch with more is inserted
	// in parts. It bounds the sink's memory: the driver holds each insert
	// about three times over (its columns, the encoded block, the
	// compressed block) and at most pipeline.sink_workers inserts run at
	// once (see doc.go, "Memory"). Default 4 MiB (about 5,000 records of
	// the larger sources).
	BatchBytes int `koanf:"batch_bytes"`
	// FlushInterval is the longest a row waits for more rows before its
	// insert is sent: about one insert a second per table at most, as
	// ClickHouse advises. Default 1s.
	FlushInterval time.Duration `koanf:"flush_interval"`
	// DialTimeout bounds connecting to a server. Default 10s.
	DialTimeout time.Duration `koanf:"dial_timeout"`
	// QueryTimeout bounds every call to the server (a DDL statement, one
	// attempt of an insert, a ping), on top of the caller's context.
	// Default 1m.
	QueryTimeout time.Duration `koanf:"query_timeout"`
	// MaxOpenConns bounds the connections to the servers. Default 8.
	MaxOpenConns int `koanf:"max_open_conns"`
	// AsyncInsert sends inserts with async_insert=1 and
	// wait_for_async_insert=1 (a Write still returns only once the server
	// stored the rows) and async_insert_deduplicate=1. Default false: the
	// sink already batches.
	AsyncInsert bool `koanf:"async_insert"`
	// InsertAttempts is how often one insert is sent, with the same
	// content and the same insert_deduplication_token, before the Writes
	// whose rows it holds fail. Repeating the identical insert is what the
	// token makes safe; after a failed Write the pipeline may group the rows
	// differently, and only ReplacingMergeTree removes those duplicates (at
	// merge or with FINAL). Default 3.
	InsertAttempts int `koanf:"insert_attempts"`
	// TTL, when set, drops rows this long after their record time: whole
	// days (365d), applied to new and existing tables (ALTER TABLE ...
	// MODIFY TTL). Parts go whole once every row passed it, so a month's
	// rows stay until the last of them expired. Default 0: kept for ever
	// (a TTL set by hand is left alone).
	TTL time.Duration `koanf:"ttl"`
	// Cluster, when set, is the cluster (remote_servers) the tables span:
	// ReplicatedReplacingMergeTree tables NAME_local and a Distributed
	// table NAME over them on every server, created ON CLUSTER; inserts go
	// to the Distributed table synchronously (see docs/clickhouse.md).
	// Default "": one server.
	Cluster string `koanf:"cluster"`
	// Delivery is "exactly_once": every table gets a column _inserted
	// (the server's insert time, 8 bytes a row before compression) and
	// after a crash a start reads the ids of the rows inserted since the
	// checkpoint's mark and does not insert them again, so no row is
	// stored twice and count() needs no FINAL; or "at_least_once": a crash
	// may store rows twice until ReplacingMergeTree merges them. Default
	// "" is exactly_once on one server and at_least_once with Cluster
	// (which exactly_once does not support yet).
	Delivery string `koanf:"delivery"`
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		Protocol:       ProtocolNative,
		Database:       DefaultDatabase,
		Username:       DefaultUsername,
		Compression:    CompressionLZ4,
		BatchRows:      DefaultBatchRows,
		BatchBytes:     DefaultBatchBytes,
		FlushInterval:  DefaultFlushInterval,
		DialTimeout:    DefaultDialTimeout,
		QueryTimeout:   DefaultQueryTimeout,
		MaxOpenConns:   DefaultMaxOpenConns,
		InsertAttempts: DefaultInsertAttempts,
	}
}

// delivery is the effective delivery mode (Config.Delivery).
func (c Config) delivery() string {
	if c.Delivery == "" {
		if c.Cluster != "" {
			return sink.DeliveryAtLeastOnce
		}
		return sink.DeliveryExactlyOnce
	}
	return c.Delivery
}

// schemaOptions are the parts of c that shape the tables.
func (c Config) schemaOptions() schema.Options {
	return schema.Options{Database: c.Database, Prefix: c.TablePrefix, Cluster: c.Cluster, TTL: c.TTL}
}

// Validate reports every invalid key, naming it
// (sink.clickhouse.protocol: must be native or http), joined with
// errors.Join; nil when c is usable. It reads no file.
func (c Config) Validate() error {
	const p = "sink.clickhouse."
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf(p+key+": "+format, args...))
	}
	for i, a := range c.Addr {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			bad("addr", "entry %d %q must be host:port", i, a)
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			bad("addr", "entry %d %q has no valid port", i, a)
		}
	}
	switch {
	case c.Delivery != "" && c.Delivery != sink.DeliveryExactlyOnce && c.Delivery != sink.DeliveryAtLeastOnce:
		bad("delivery", "unknown mode %q (%s, %s, or empty for the default)", c.Delivery, sink.DeliveryExactlyOnce, sink.DeliveryAtLeastOnce)
	case c.Delivery == sink.DeliveryExactlyOnce && c.Cluster != "":
		bad("delivery", "exactly_once needs one server; with sink.clickhouse.cluster set leave it empty or choose at_least_once")
	}
	if c.Protocol != ProtocolNative && c.Protocol != ProtocolHTTP {
		bad("protocol", "must be native or http, got %q", c.Protocol)
	}
	if !schema.PlainIdent(c.Database) {
		bad("database", "must be a plain identifier ([A-Za-z_][A-Za-z0-9_]*), got %q", c.Database)
	}
	if c.Username == "" {
		bad("username", "must not be empty")
	}
	if c.TablePrefix != "" && !schema.PlainIdent(c.TablePrefix) {
		bad("table_prefix", "must be empty or a plain identifier ([A-Za-z_][A-Za-z0-9_]*), got %q", c.TablePrefix)
	}
	if err := c.TLS.Validate(p + "tls"); err != nil {
		errs = append(errs, err)
	}
	switch c.Compression {
	case CompressionLZ4, CompressionZSTD, CompressionNone:
	default:
		bad("compression", "must be lz4, zstd or none, got %q", c.Compression)
	}
	if c.BatchRows < 1 || c.BatchRows > MaxBatchRows {
		bad("batch_rows", "must be between 1 and %d, got %d", MaxBatchRows, c.BatchRows)
	}
	if c.BatchBytes < MinBatchBytes || c.BatchBytes > MaxBatchBytes {
		bad("batch_bytes", "must be between %d (64 KiB) and %d (1 GiB), got %d", MinBatchBytes, MaxBatchBytes, c.BatchBytes)
	}
	if c.FlushInterval < time.Millisecond {
		bad("flush_interval", "must be at least 1ms, got %s", c.FlushInterval)
	}
	if c.DialTimeout <= 0 {
		bad("dial_timeout", "must be positive, got %s", c.DialTimeout)
	}
	if c.QueryTimeout <= 0 {
		bad("query_timeout", "must be positive, got %s", c.QueryTimeout)
	}
	if c.MaxOpenConns < 1 {
		bad("max_open_conns", "must be at least 1, got %d", c.MaxOpenConns)
	}
	if c.TTL < 0 || c.TTL%(24*time.Hour) != 0 {
		bad("ttl", "must be 0 (off) or a whole number of days such as 365d, got %s", c.TTL)
	}
	if c.Cluster != "" && !schema.ClusterName(c.Cluster) {
		bad("cluster", "must be empty or a cluster name ([A-Za-z0-9_.-]+), got %q", c.Cluster)
	}
	if c.Cluster != "" && c.AsyncInsert {
		bad("async_insert", "must be false with a cluster: inserts into the Distributed table are synchronous, so that their deduplication tokens reach the shards")
	}
	if c.InsertAttempts < 1 || c.InsertAttempts > 100 {
		bad("insert_attempts", "must be between 1 and 100, got %d", c.InsertAttempts)
	}
	return errors.Join(errs...)
}

// addrs returns Addr, or the default address of the protocol.
func (c Config) addrs() []string {
	if len(c.Addr) > 0 {
		return c.Addr
	}
	port := map[[2]bool]string{
		{false, false}: "9000", {false, true}: "9440",
		{true, false}: "8123", {true, true}: "8443",
	}[[2]bool{c.Protocol == ProtocolHTTP, c.TLS.Enabled}]
	return []string{net.JoinHostPort("127.0.0.1", port)}
}

// options are the driver's options for cfg.
func (c Config) options(pw secret.Secret, tlsCfg *tls.Config) *ch.Options {
	proto := ch.Native
	if c.Protocol == ProtocolHTTP {
		proto = ch.HTTP
	}
	method := ch.CompressionLZ4
	switch c.Compression {
	case CompressionZSTD:
		method = ch.CompressionZSTD
	case CompressionNone:
		method = ch.CompressionNone
	}
	return &ch.Options{
		Protocol: proto,
		Addr:     c.addrs(),
		// No database here: it may not exist yet, and every statement
		// names it.
		Auth:            ch.Auth{Username: c.Username, Password: pw.Reveal()},
		TLS:             tlsCfg,
		Compression:     &ch.Compression{Method: method},
		DialTimeout:     c.DialTimeout,
		ReadTimeout:     c.QueryTimeout,
		MaxOpenConns:    c.MaxOpenConns,
		MaxIdleConns:    min(c.MaxOpenConns, 5),
		ConnMaxLifetime: time.Hour,
		// A connection back in the pool drops its encoding and
		// compression buffers: they grow to the largest insert it sent,
		// and up to MaxIdleConns idle connections would keep that much
		// each (Memory, doc.go).
		FreeBufOnConnRelease: true,
		ConnOpenStrategy:     ch.ConnOpenInOrder,
		ClientInfo: ch.ClientInfo{Products: []struct{ Name, Version string }{
			{Name: "svcexport-collector"},
		}},
	}
}
