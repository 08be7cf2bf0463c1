package clickhouse

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/tlsconfig"
)

func TestDefaultConfigIsValid(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Protocol != "native" || c.Database != "svc" || c.Username != "default" || c.Compression != "lz4" ||
		c.BatchRows != 10_000 || c.FlushInterval != time.Second || c.AsyncInsert || c.TablePrefix != "" ||
		c.TTL != 0 || c.Cluster != "" {
		t.Errorf("defaults changed: %+v", c)
	}
	if got := c.addrs(); len(got) != 1 || got[0] != "127.0.0.1:9000" {
		t.Errorf("default native address %v", got)
	}
	c.Protocol, c.TLS.Enabled = ProtocolHTTP, true
	if got := c.addrs(); got[0] != "127.0.0.1:8443" {
		t.Errorf("default https address %v", got)
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"unknown protocol", func(c *Config) { c.Protocol = "grpc" }, "sink.clickhouse.protocol: must be native or http"},
		{"empty protocol", func(c *Config) { c.Protocol = "" }, "sink.clickhouse.protocol: must be native or http"},
		{"address without port", func(c *Config) { c.Addr = []string{"ch1"} }, "sink.clickhouse.addr: entry 0 \"ch1\" must be host:port"},
		{"address with a bad port", func(c *Config) { c.Addr = []string{"ch1:9000", "ch2:http"} }, "sink.clickhouse.addr: entry 1"},
		{"database that needs quoting", func(c *Config) { c.Database = "svc; DROP" }, "sink.clickhouse.database: must be a plain identifier"},
		{"empty database", func(c *Config) { c.Database = "" }, "sink.clickhouse.database:"},
		{"prefix that needs quoting", func(c *Config) { c.TablePrefix = "svc-" }, "sink.clickhouse.table_prefix: must be empty or a plain identifier"},
		{"empty username", func(c *Config) { c.Username = "" }, "sink.clickhouse.username: must not be empty"},
		{"unknown compression", func(c *Config) { c.Compression = "gzip" }, "sink.clickhouse.compression: must be lz4, zstd or none"},
		{"no rows per insert", func(c *Config) { c.BatchRows = 0 }, "sink.clickhouse.batch_rows: must be between 1 and 1000000"},
		{"too many rows per insert", func(c *Config) { c.BatchRows = 2_000_000 }, "sink.clickhouse.batch_rows:"},
		{"no flush interval", func(c *Config) { c.FlushInterval = 0 }, "sink.clickhouse.flush_interval: must be at least 1ms"},
		{"no dial timeout", func(c *Config) { c.DialTimeout = 0 }, "sink.clickhouse.dial_timeout: must be positive"},
		{"no query timeout", func(c *Config) { c.QueryTimeout = -time.Second }, "sink.clickhouse.query_timeout: must be positive"},
		{"no connections", func(c *Config) { c.MaxOpenConns = 0 }, "sink.clickhouse.max_open_conns: must be at least 1"},
		{"no insert attempt", func(c *Config) { c.InsertAttempts = 0 }, "sink.clickhouse.insert_attempts: must be between 1 and 100"},
		{"certificate without key", func(c *Config) { c.TLS = tlsconfig.Config{Enabled: true, CertFile: "c.pem"} }, "sink.clickhouse.tls.key_file: must be set together with sink.clickhouse.tls.cert_file"},
		{"TLS keys with TLS off", func(c *Config) { c.TLS = tlsconfig.Config{CAFile: "ca.pem"} }, "sink.clickhouse.tls.ca_file: is set but sink.clickhouse.tls.enabled is false"},
		{"TTL of part of a day", func(c *Config) { c.TTL = 36 * time.Hour }, "sink.clickhouse.ttl: must be 0 (off) or a whole number of days such as 365d, got 36h0m0s"},
		{"negative TTL", func(c *Config) { c.TTL = -24 * time.Hour }, "sink.clickhouse.ttl: must be 0 (off) or a whole number of days"},
		{"cluster name that needs quoting", func(c *Config) { c.Cluster = "logs`; DROP" }, "sink.clickhouse.cluster: must be empty or a cluster name"},
		{"async inserts on a cluster", func(c *Config) { c.Cluster, c.AsyncInsert = "logs", true }, "sink.clickhouse.async_insert: must be false with a cluster"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.modify(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestValidateReportsEveryBadKey(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Protocol, cfg.Compression, cfg.BatchRows = "x", "y", -1
	err := cfg.Validate()
	for _, key := range []string{"protocol", "compression", "batch_rows"} {
		if err == nil || !strings.Contains(err.Error(), "sink.clickhouse."+key+":") {
			t.Errorf("Validate() = %v, want it to name sink.clickhouse.%s", err, key)
		}
	}
}

func TestPasswordIsRedactedAndFileIsRead(t *testing.T) {
	t.Parallel()
	var p secret.Secret
	if err := p.UnmarshalText([]byte("hunter2")); err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v %#v", p, p, p); strings.Contains(s, "hunter2") {
		t.Fatalf("password printed: %s", s)
	}
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PasswordFile = file
	s, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.opts.Auth.Password != "from-file" {
		t.Errorf("password from file = %q", s.opts.Auth.Password)
	}
	cfg.Password = secret.New("inline")
	if s, err = New(cfg, nil, nil); err != nil || s.opts.Auth.Password != "inline" {
		t.Errorf("inline password must win over the file: %v %q", err, s.opts.Auth.Password)
	}
	cfg.Password, cfg.PasswordFile = secret.Secret{}, filepath.Join(t.TempDir(), "missing")
	if _, err := New(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "sink.clickhouse.password_file") {
		t.Errorf("missing password file: %v", err)
	}
}

// writeCert writes a self-signed certificate and its key as PEM files.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ch.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, DNSNames: []string{"ch.test"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestNewReadsTheTLSFilesAndNamesTheKeyOnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	cfg := DefaultConfig()
	cfg.TLS = tlsconfig.Config{Enabled: true, CAFile: cert, CertFile: cert, KeyFile: key, ServerName: "ch.test"}
	s, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.opts.TLS; c == nil || c.RootCAs == nil || len(c.Certificates) != 1 || c.ServerName != "ch.test" || c.InsecureSkipVerify {
		t.Errorf("tls.Config = %+v", c)
	}
	if s, err := New(DefaultConfig(), nil, nil); err != nil || s.opts.TLS != nil {
		t.Errorf("TLS off gives %v, %v", s.opts.TLS, err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	_ = os.WriteFile(notPEM, []byte("hello"), 0o600)
	for _, bad := range []struct {
		tls  tlsconfig.Config
		want string
	}{
		{tlsconfig.Config{Enabled: true, CAFile: filepath.Join(dir, "none.pem")}, "sink.clickhouse.tls.ca_file:"},
		{tlsconfig.Config{Enabled: true, CAFile: notPEM}, "sink.clickhouse.tls.ca_file: no PEM certificate"},
		{tlsconfig.Config{Enabled: true, CertFile: cert, KeyFile: notPEM}, "sink.clickhouse.tls.cert_file/key_file:"},
	} {
		cfg.TLS = bad.tls
		if _, err := New(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("New with %+v = %v, want %q", bad.tls, err, bad.want)
		}
	}
}

func TestTTLAndClusterReachTheSchema(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.TTL, c.Cluster, c.TablePrefix = 365*24*time.Hour, "prod-eu.1", "svc_"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o := c.schemaOptions()
	if o.TTL != c.TTL || o.Cluster != "prod-eu.1" || o.Prefix != "svc_" || o.Database != "svc" {
		t.Errorf("schema options %+v", o)
	}
}

// On a cluster every insert into the Distributed table is synchronous
// (insert_distributed_sync, alias of distributed_foreground_insert), so
// that it returns only once the shards stored the rows, with the
// deduplication token they check; on one server the setting is not sent.
func TestInsertSettingsOfAClusterAreSynchronous(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	s := insertSettings(c, "tok")
	if s["insert_deduplication_token"] != "tok" || s["insert_deduplicate"] != 1 {
		t.Errorf("settings %v", s)
	}
	if _, ok := s["insert_distributed_sync"]; ok {
		t.Errorf("insert_distributed_sync on one server: %v", s)
	}
	c.Cluster = "logs"
	if s := insertSettings(c, "tok"); s["insert_distributed_sync"] != 1 || s["insert_deduplication_token"] != "tok" {
		t.Errorf("cluster settings %v", s)
	}
}
