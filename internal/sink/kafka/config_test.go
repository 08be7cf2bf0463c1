package kafka_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	kfile "github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/svcexport/collector/internal/ocsf"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
	"github.com/svcexport/collector/internal/tlsconfig"
)

// loadConfig applies testdata/name over the defaults the way the
// collector's loader does (koanf, YAML, key sink.kafka).
func loadConfig(t *testing.T, name string) kafka.Config {
	t.Helper()
	k := koanf.New(".")
	if err := k.Load(kfile.Provider("testdata/"+name), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	cfg := kafka.DefaultConfig()
	if err := k.Unmarshal("sink.kafka", &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestConfigFromYAML(t *testing.T) {
	t.Parallel()
	full := kafka.Config{
		Brokers:            []string{"kafka-1:9092", "kafka-2:9092"},
		ClientID:           "collector-eu",
		Topic:              "siem.{source}.{account}",
		Format:             "record",
		OCSF:               ocsfenc.Config{RawData: true, ProductName: ocsf.DefaultProductName, EdgeProductName: ocsf.DefaultEdgeProductName, VendorName: "Vendor"},
		Compression:        "lz4",
		Acks:               "all",
		Delivery:           "at_least_once",
		Timestamp:          "fetched",
		Key:                "entity",
		Keys:               map[string]string{"agent_info": "entity", "edge_alerts": "entity", "dns": "id"},
		Linger:             25 * time.Millisecond,
		BatchMaxBytes:      512 << 10,
		MaxBufferedRecords: 20_000,
		MaxBufferedBytes:   64 << 20,
		RequestTimeout:     15 * time.Second,
		DeliveryTimeout:    90 * time.Second,
		Partitioner:        "account",
		CreateTopics:       true,
		Partitions:         12,
		ReplicationFactor:  3,
		TLS: tlsconfig.Config{
			Enabled: true, CAFile: "/etc/collector/kafka-ca.pem", CertFile: "/etc/collector/client.pem",
			KeyFile: "/etc/collector/client-key.pem", ServerName: "kafka.internal",
		},
		SASL: kafkasasl.Config{Mechanism: "SCRAM-SHA-512", Username: "collector", Password: secret.New("hunter2")},
	}
	partial := kafka.DefaultConfig()
	partial.Brokers = []string{"127.0.0.1:19092"}
	partial.SASL = kafkasasl.Config{Mechanism: "PLAIN", Username: "collector", PasswordFile: "/run/secrets/kafka"}

	oauth := kafka.DefaultConfig()
	oauth.Brokers = []string{"pkc-1.eu-west-1.aws.confluent.cloud:9092"}
	oauth.TLS = tlsconfig.Config{Enabled: true}
	oauth.SASL = kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{
		TokenURL: "https://idp.example.com/oauth2/token", ClientID: "svc-collector", ClientSecretFile: "/run/secrets/oauth-client",
		ClientAuth: "post", Scopes: []string{"kafka", "api://kafka/.default"},
		Extensions: map[string]string{"logicalCluster": "lkc-abc12", "identityPoolId": "pool-XyZ"}}}
	aws := kafka.DefaultConfig()
	aws.Brokers = []string{"b-1.collector.abc123.c2.kafka.eu-central-1.amazonaws.com:9098"}
	aws.TLS = tlsconfig.Config{Enabled: true}
	aws.SASL = kafkasasl.Config{Mechanism: "AWS_MSK_IAM", AWS: kafkasasl.AWSConfig{
		AccessKeyID: "ASIAEXAMPLE", SecretAccessKeyFile: "/run/aws/secret", SessionTokenFile: "/run/aws/session"}}

	for _, tt := range []struct {
		file string
		want kafka.Config
	}{{"full.yaml", full}, {"partial.yaml", partial}, {"oauth.yaml", oauth}, {"aws.yaml", aws}} {
		t.Run(tt.file, func(t *testing.T) {
			got := loadConfig(t, tt.file)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestDefaultsAreDocumentedValues(t *testing.T) {
	t.Parallel()
	c := kafka.DefaultConfig()
	if c.ClientID != "svc-collector" || c.Topic != "svc.{source}" || c.Format != "envelope" || c.Compression != "zstd" ||
		c.Acks != "all" || c.Partitioner != "key" || c.CreateTopics {
		t.Errorf("defaults changed: %+v", c)
	}
	// Agents and alerts are states, keyed by entity; event streams by id.
	for src, want := range map[string]string{"agent_info": "entity", "edge_alerts": "entity", "dns": "id", "connections": "id",
		"changed_files": "id", "user_logins": "id", "cloud_activities": "id", "audit_logs": "id", "edge_audit_events": "id"} {
		if got := c.KeyOf(src); got != want {
			t.Errorf("default key of %s: %s, want %s", src, got, want)
		}
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "sink.kafka.brokers") {
		t.Errorf("defaults without brokers: want a sink.kafka.brokers error, got %v", err)
	}
	c.Brokers = []string{"127.0.0.1:9092"}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults plus a broker: %v", err)
	}
}

func TestPasswordNeverPrints(t *testing.T) {
	t.Parallel()
	c := loadConfig(t, "full.yaml")
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("password printed: %s", s)
		}
	}
}

func TestInvalidConfigNamesTheKey(t *testing.T) {
	t.Parallel()
	valid := func() kafka.Config {
		c := kafka.DefaultConfig()
		c.Brokers = []string{"127.0.0.1:9092"}
		return c
	}
	tests := []struct {
		name   string
		change func(*kafka.Config)
		want   string
	}{
		{"no brokers", func(c *kafka.Config) { c.Brokers = nil }, "sink.kafka.brokers: must list at least one broker"},
		{"a key of an unknown source", func(c *kafka.Config) { c.Keys["dnss"] = "id" }, `sink.kafka.keys.dnss: unknown source "dnss" (agent_info, audit_logs,`},
		{"an unknown key of a source", func(c *kafka.Config) { c.Keys["dns"] = "fqdn" }, `sink.kafka.keys.dns: unknown value "fqdn" (id, entity)`},
		{"a broker without port", func(c *kafka.Config) { c.Brokers = []string{"localhost"} }, `sink.kafka.brokers: entry 0: "localhost" is not host:port`},
		{"an empty broker", func(c *kafka.Config) { c.Brokers = []string{"a:1", ""} }, "sink.kafka.brokers: entry 1: empty broker address"},
		{"a broker without host", func(c *kafka.Config) { c.Brokers = []string{":9092"} }, `sink.kafka.brokers: entry 0: ":9092" has no host`},
		{"a broker with a bad port", func(c *kafka.Config) { c.Brokers = []string{"k:99999"} }, `sink.kafka.brokers: entry 0: "k:99999" has an invalid port`},
		{"an unknown codec", func(c *kafka.Config) { c.Compression = "zip" }, `sink.kafka.compression: unknown codec "zip" (zstd, lz4, snappy, gzip, none)`},
		{"acks leader", func(c *kafka.Config) { c.Acks = "leader" }, `sink.kafka.acks: "leader" is not supported`},
		{"acks none", func(c *kafka.Config) { c.Acks = "none" }, `sink.kafka.acks: "none" is not supported`},
		{"an unknown placeholder", func(c *kafka.Config) { c.Topic = "svc.{shard}" }, "sink.kafka.topic: \"svc.{shard}\" has an unknown placeholder {shard}"},
		{"an unclosed placeholder", func(c *kafka.Config) { c.Topic = "svc.{source" }, "sink.kafka.topic: \"svc.{source\" has a '{' without '}'"},
		{"a topic with a space", func(c *kafka.Config) { c.Topic = "svc {source}" }, "sink.kafka.topic: \"svc {source}\" holds ' '"},
		{"an empty topic", func(c *kafka.Config) { c.Topic = "" }, "sink.kafka.topic: must not be empty"},
		{"an unknown format", func(c *kafka.Config) { c.Format = "avro" }, `sink.kafka.format: unknown format "avro"`},
		{"an unknown partitioner", func(c *kafka.Config) { c.Partitioner = "random" }, `sink.kafka.partitioner: unknown partitioner "random"`},
		{"a mechanism without password", func(c *kafka.Config) {
			c.SASL = kafkasasl.Config{Mechanism: "SCRAM-SHA-256", Username: "u"}
		}, "sink.kafka.sasl.password: must be set (or sink.kafka.sasl.password_file)"},
		{"a mechanism without user", func(c *kafka.Config) {
			c.SASL = kafkasasl.Config{Mechanism: "PLAIN", Password: secret.New("p")}
		}, "sink.kafka.sasl.username: must be set"},
		{"an unknown mechanism", func(c *kafka.Config) {
			c.SASL = kafkasasl.Config{Mechanism: "GSSAPI", Username: "u", Password: secret.New("p")}
		}, `sink.kafka.sasl.mechanism: unknown mechanism "GSSAPI"`},
		{"a password without mechanism", func(c *kafka.Config) { c.SASL.Password = secret.New("p") }, "sink.kafka.sasl.mechanism: must be set"},
		{"a ca file with tls off", func(c *kafka.Config) { c.TLS.CAFile = "/ca.pem" }, "sink.kafka.tls.ca_file: is set but sink.kafka.tls.enabled is false"},
		{"a cert without key", func(c *kafka.Config) { c.TLS = tlsconfig.Config{Enabled: true, CertFile: "/c.pem"} }, "sink.kafka.tls.key_file: must be set together with sink.kafka.tls.cert_file"},
		{"a negative linger", func(c *kafka.Config) { c.Linger = -time.Millisecond }, "sink.kafka.linger: must be between 0 and 1m"},
		{"tiny batches", func(c *kafka.Config) { c.BatchMaxBytes = 10 }, "sink.kafka.batch_max_bytes: must be between 1024"},
		{"a byte buffer below a batch", func(c *kafka.Config) { c.MaxBufferedBytes = 4096 }, "sink.kafka.max_buffered_bytes: 4096 is below sink.kafka.batch_max_bytes"},
		{"no buffered records", func(c *kafka.Config) { c.MaxBufferedRecords = 0 }, "sink.kafka.max_buffered_records: must be at least 1"},
		{"no request timeout", func(c *kafka.Config) { c.RequestTimeout = 0 }, "sink.kafka.request_timeout: must be positive"},
		{"a negative delivery timeout", func(c *kafka.Config) { c.DeliveryTimeout = -time.Second }, "sink.kafka.delivery_timeout: must be 0 (no bound) or positive"},
		{"zero partitions", func(c *kafka.Config) { c.Partitions = 0 }, "sink.kafka.partitions: must be -1 (broker default) or at least 1"},
		{"zero replicas", func(c *kafka.Config) { c.ReplicationFactor = 0 }, "sink.kafka.replication_factor: must be -1 (broker default)"},
		{"an empty client id", func(c *kafka.Config) { c.ClientID = "" }, "sink.kafka.client_id: must not be empty"},
		{"transactions without exactly once", func(c *kafka.Config) { c.TransactionalID = "x"; c.Delivery = "at_least_once" }, "sink.kafka.transactional_id: needs sink.kafka.delivery exactly_once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate accepted %+v", c)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestBadFileNamesEveryBadKey(t *testing.T) {
	t.Parallel()
	err := loadConfig(t, "bad.yaml").Validate()
	if err == nil {
		t.Fatal("Validate accepted bad.yaml")
	}
	for _, want := range []string{
		`sink.kafka.brokers: entry 0: "localhost" is not host:port`,
		"sink.kafka.brokers: entry 1: empty broker address",
		"sink.kafka.topic:",
		`sink.kafka.compression: unknown codec "zip"`,
		`sink.kafka.acks: "leader"`,
		"sink.kafka.sasl.password:",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestNewRefusesMissingFilesByKey(t *testing.T) {
	t.Parallel()
	c := kafka.DefaultConfig()
	c.Brokers = []string{"127.0.0.1:9092"}
	c.TLS = tlsconfig.Config{Enabled: true, CAFile: t.TempDir() + "/missing.pem"}
	if _, err := kafka.New(c, nil, t.TempDir(), nil, nil); err == nil || !strings.Contains(err.Error(), "sink.kafka.tls.ca_file") {
		t.Errorf("missing CA file: got %v", err)
	}
	c.TLS = tlsconfig.Config{}
	c.SASL = kafkasasl.Config{Mechanism: "SCRAM-SHA-256", Username: "u", PasswordFile: t.TempDir() + "/missing"}
	if _, err := kafka.New(c, nil, t.TempDir(), nil, nil); err == nil || !strings.Contains(err.Error(), "sink.kafka.sasl.password_file") {
		t.Errorf("missing password file: got %v", err)
	}
	c.SASL = kafkasasl.Config{}
	if _, err := kafka.New(c, nil, "", nil, nil); err == nil || !strings.Contains(err.Error(), "dead-letter") {
		t.Errorf("no dead-letter dir: got %v", err)
	}
}

func TestMetricsFollowPrometheusNaming(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := kafka.DefaultConfig()
	c.Brokers = []string{"127.0.0.1:9092"}
	if _, err := kafka.New(c, nil, t.TempDir(), reg, nil); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	// A second sink on the same registry cannot share the buffered gauges,
	// which read one client.
	if _, err := kafka.New(c, nil, t.TempDir(), reg, nil); err == nil || !strings.Contains(err.Error(), "collector_kafka_buffered_records") {
		t.Errorf("second sink on one registry: %v", err)
	}
}
