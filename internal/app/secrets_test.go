package app

import (
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/clickhouse"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
)

// The process's scrubber knows every secret of the configuration, inline
// or in a file, of every sink of the list, and the AWS secrets of the
// environment; with the client id and the ClickHouse user, their HTTP
// Basic forms too (issue 20 item 3).
func TestNewScrubberKnowsEverySecretOfTheConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := config.Default()
	cfg.API.SecretFile = file("api", "api-secret-from-file")
	cfg.Edge.Token = secret.New("edge-token-inline")

	oauth := config.SinkConfig{Type: config.SinkKafka, Name: "siem", Kafka: kafka.DefaultConfig()}
	oauth.Kafka.SASL = kafkasasl.Config{Mechanism: kafkasasl.OAuthBearer, OAuth: kafkasasl.OAuthConfig{
		ClientID: "collector", ClientSecretFile: file("cs", "oauth/client+secret")}}
	static := config.SinkConfig{Type: config.SinkKafka, Name: "static", Kafka: kafka.DefaultConfig()}
	static.Kafka.SASL = kafkasasl.Config{Mechanism: kafkasasl.OAuthBearer, OAuth: kafkasasl.OAuthConfig{Token: secret.New("static-oauth-token")}}
	scram := config.SinkConfig{Type: config.SinkKafka, Name: "scram", Kafka: kafka.DefaultConfig()}
	scram.Kafka.SASL = kafkasasl.Config{Mechanism: kafkasasl.ScramSHA512, Username: "u", Password: secret.New("scram-password")}
	msk := config.SinkConfig{Type: config.SinkKafka, Name: "msk", Kafka: kafka.DefaultConfig()}
	msk.Kafka.SASL = kafkasasl.Config{Mechanism: kafkasasl.AWSMSKIAM, AWS: kafkasasl.AWSConfig{
		AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: secret.New("aws-secret-key-inline"), SessionTokenFile: file("st", "aws-session-token-file")}}
	lake := config.SinkConfig{Type: config.SinkClickHouse, Name: "lake", ClickHouse: clickhouse.DefaultConfig()}
	lake.ClickHouse.Username, lake.ClickHouse.PasswordFile = "writer", file("ch", "clickhouse-password")
	cfg.SinkList = config.SinkList{oauth, static, scram, msk, lake}

	env := map[string]string{"AWS_SECRET_ACCESS_KEY": "aws-env-secret-key", "AWS_SESSION_TOKEN": "aws-env-session-token"}
	s := newScrubber(cfg, cfg.SourceConfig(), func(k string) string { return env[k] })

	for _, v := range []string{
		"api-secret-from-file", "edge-token-inline",
		"oauth/client+secret", url.QueryEscape("oauth/client+secret"),
		base64.StdEncoding.EncodeToString([]byte("collector:oauth/client+secret")),
		base64.StdEncoding.EncodeToString([]byte("collector:" + url.QueryEscape("oauth/client+secret"))),
		"static-oauth-token", "scram-password", "aws-secret-key-inline", "aws-session-token-file",
		"clickhouse-password", base64.StdEncoding.EncodeToString([]byte("writer:clickhouse-password")),
		"aws-env-secret-key", "aws-env-session-token",
	} {
		if got := s.Scrub("x " + v + " y"); strings.Contains(got, v) {
			t.Errorf("the scrubber does not know %q: %q", v, got)
		}
	}
	if got := s.Scrub("AKIAEXAMPLE collector writer"); got != "AKIAEXAMPLE collector writer" {
		t.Errorf("ids are no secrets, yet: %q", got)
	}
}
