package kafka

import (
	"io"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
)

// Credentials that would cross the network in clear text, and MSK IAM
// without the TLS it requires, are warned about at start and by check.
func TestWarningsAboutCredentialsInClearText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		sasl kafkasasl.Config
		tls  bool
		want string
	}{
		{"plain", kafkasasl.Config{Mechanism: "PLAIN", Username: "u", Password: secret.New("p")}, false, "SASL PLAIN without TLS"},
		{"oauth", kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenFile: "/t"}}, false, "bearer token in clear text"},
		{"aws", kafkasasl.Config{Mechanism: "AWS_MSK_IAM"}, false, "only over TLS"},
		{"http token url", kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenURL: "http://idp/token", ClientID: "c", ClientSecret: secret.New("s")}}, true, "token URL (sink.kafka.sasl.oauth.token_url) is plain http"},
		{"none with tls", kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenURL: "https://idp/token", ClientID: "c", ClientSecret: secret.New("s")}}, true, ""},
	} {
		cfg := DefaultConfig()
		cfg.SASL, cfg.TLS.Enabled = tt.sasl, tt.tls
		w := strings.Join(warnings(cfg), "\n")
		if tt.want == "" && w != "" || !strings.Contains(w, tt.want) {
			t.Errorf("%s: warnings %q, want %q", tt.name, w, tt.want)
		}
	}
	cfg := DefaultConfig()
	cfg.SASL = kafkasasl.Config{Mechanism: "AWS_MSK_IAM"}
	if h := connHint(cfg, io.EOF); !strings.Contains(h, "kafka-cluster:Connect") {
		t.Errorf("hint %q", h)
	}
	cfg.SASL = kafkasasl.Config{Mechanism: "OAUTHBEARER"}
	if h := connHint(cfg, io.EOF); !strings.Contains(h, "sink.kafka.sasl.oauth") {
		t.Errorf("hint %q", h)
	}
}
