package kafka_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger
// that franz-go's goroutines use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSecretsEchoedByTheTokenEndpointOrTheBrokerNeverShow: an OAuth token
// endpoint that echoes the whole request in error_description (basic and
// post client authentication), and a broker whose SASL refusal echoes the
// token it was given, make the sink's Start fail with an error, and the
// sink and franz-go log (at debug level), holding no form of the client
// secret, the token, nor of another secret of the process that the shared
// scrubber knows (issue 20 item 3).
func TestSecretsEchoedByTheTokenEndpointOrTheBrokerNeverShow(t *testing.T) {
	t.Parallel()
	const (
		clientID     = "collector"
		clientSecret = "cl1ent/s3cret+&="
		staticToken  = "static-t0ken-for-the-broker"
		chPassword   = "clickhouse-pw-elsewhere"
	)
	forms := func(s string) []string {
		j, _ := json.Marshal(s)
		return []string{s, url.QueryEscape(s), strings.Trim(string(j), `"`)}
	}
	leaks := append(append(forms(clientSecret), forms(staticToken)...), chPassword,
		base64.StdEncoding.EncodeToString([]byte(clientID+":"+clientSecret)),
		base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID)+":"+url.QueryEscape(clientSecret))))

	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client",
			"error_description": fmt.Sprintf("refused %s with %s (also %s)", body, r.Header.Get("Authorization"), chPassword)})
	}))
	t.Cleanup(echo.Close)

	for _, tt := range []struct {
		name  string
		oauth kafkasasl.OAuthConfig
		check func([]byte) (bool, time.Duration, []byte, string)
	}{
		{"token endpoint echo, client_auth basic",
			kafkasasl.OAuthConfig{TokenURL: echo.URL + "/token", ClientID: clientID, ClientSecret: secret.New(clientSecret)}, nil},
		{"token endpoint echo, client_auth post",
			kafkasasl.OAuthConfig{TokenURL: echo.URL + "/token", ClientID: clientID, ClientSecret: secret.New(clientSecret), ClientAuth: kafkasasl.ClientAuthPost}, nil},
		{"broker echo of a static token", kafkasasl.OAuthConfig{Token: secret.New(staticToken)},
			func(auth []byte) (bool, time.Duration, []byte, string) {
				return false, 0, nil, "token rejected: " + string(auth) + " and " + chPassword
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check := tt.check
			if check == nil {
				check = func([]byte) (bool, time.Duration, []byte, string) { return false, 0, nil, "no token" }
			}
			c, _ := newSASLBroker(t, "OAUTHBEARER", check, kfake.SeedTopics(1, "svc.dns"))
			var logs syncBuffer
			log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			cfg := testConfig(c)
			cfg.SASL = kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: tt.oauth}
			shared := secret.NewScrubber(secret.New(chPassword))
			s, err := kafka.New(cfg, []record.Stream{{Source: "dns", Account: "acme"}}, t.TempDir(), nil, log, kafka.WithScrubber(shared))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = s.Start(ctx)
			if err == nil {
				t.Fatal("Start succeeded against a refusing endpoint or broker")
			}
			t.Logf("Start: %v", err)
			for _, leak := range leaks {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the error holds %q: %v", leak, err)
				}
				if strings.Contains(logs.String(), leak) {
					t.Errorf("the log holds %q:\n%s", leak, logs.String())
				}
			}
			if !strings.Contains(err.Error()+logs.String(), secret.Redacted) {
				t.Errorf("nothing was redacted: the echo did not reach the error or the log\n%v\n%s", err, logs.String())
			}
		})
	}
}
