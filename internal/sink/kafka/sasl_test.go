package kafka_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
	"github.com/svcexport/collector/internal/testinfra/awstest"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// kfake knows SASL PLAIN and SCRAM only. For OAUTHBEARER and AWS_MSK_IAM
// these tests answer the two SASL requests of every connection
// (SaslHandshake, SaslAuthenticate) through kfake's control hooks, with a
// check of what the client sent; everything else is kfake's. What they
// prove: the client side end to end (franz-go's mechanism fed by our
// configuration, over real connections, with re-authentication). What
// they cannot: a real broker's token validation (JWT signature, audience)
// or Amazon MSK's IAM check.

// saslAuth is one SaslAuthenticate the broker answered.
type saslAuth struct {
	bytes []byte
	ok    bool
}

// saslBroker answers the SASL exchange of mech on a kfake cluster.
type saslBroker struct {
	mu    sync.Mutex
	auths []saslAuth
	// check decides an authentication: accept, the session lifetime
	// (0: none), the bytes to answer (nil: none), or a refusal message.
	check func(auth []byte) (ok bool, lifetime time.Duration, reply []byte, msg string)
}

func newSASLBroker(t *testing.T, mech string, check func([]byte) (bool, time.Duration, []byte, string), opts ...kfake.Opt) (*kfake.Cluster, *saslBroker) {
	t.Helper()
	c := kafkatest.NewCluster(t, opts...)
	b := &saslBroker{check: check}
	c.ControlKey(int16(kmsg.SASLHandshake), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.SASLHandshakeRequest)
		resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = []string{mech}
		if r.Mechanism != mech {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.SASLAuthenticateRequest)
		resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		b.mu.Lock()
		check := b.check
		b.mu.Unlock()
		ok, lifetime, reply, msg := check(r.SASLAuthBytes)
		b.mu.Lock()
		b.auths = append(b.auths, saslAuth{bytes: bytes.Clone(r.SASLAuthBytes), ok: ok})
		b.mu.Unlock()
		if !ok {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			resp.ErrorMessage = &msg
			return resp, nil, true
		}
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
		resp.SASLAuthBytes = reply
		return resp, nil, true
	})
	return c, b
}

func (b *saslBroker) setCheck(f func([]byte) (bool, time.Duration, []byte, string)) {
	b.mu.Lock()
	b.check = f
	b.mu.Unlock()
}

func (b *saslBroker) seen() []saslAuth {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]saslAuth(nil), b.auths...)
}

// bearer reads the token of an OAUTHBEARER initial response (RFC 7628
// section 3.1: gs2 header, then key=value pairs separated by \x01) and
// its extensions.
func bearer(auth []byte) (string, map[string]string, error) {
	s := string(auth)
	if !strings.HasPrefix(s, "n,") {
		return "", nil, fmt.Errorf("no gs2 header: %q", s)
	}
	_, kvs, ok := strings.Cut(s, "\x01")
	if !ok || !strings.HasSuffix(kvs, "\x01\x01") {
		return "", nil, fmt.Errorf("malformed: %q", s)
	}
	tok := ""
	ext := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(kvs, "\x01\x01"), "\x01") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "auth" {
			t, ok := strings.CutPrefix(v, "Bearer ")
			if !ok {
				return "", nil, fmt.Errorf("auth %q is no Bearer", v)
			}
			tok = t
			continue
		}
		ext[k] = v
	}
	return tok, ext, nil
}

// acceptTokens accepts OAUTHBEARER initial responses whose token is in
// the set, with a session lifetime.
func acceptTokens(lifetime time.Duration, tokens ...string) func([]byte) (bool, time.Duration, []byte, string) {
	return func(auth []byte) (bool, time.Duration, []byte, string) {
		tok, _, err := bearer(auth)
		if err != nil {
			return false, 0, nil, err.Error()
		}
		for _, t := range tokens {
			if tok == t {
				return true, lifetime, nil, ""
			}
		}
		return false, 0, nil, "invalid token"
	}
}

func tokenOf(t *testing.T, a saslAuth) string {
	t.Helper()
	tok, _, err := bearer(a.bytes)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// OAUTHBEARER with a token file: the sink authenticates every connection
// with the file's token and the extensions; when an outside process
// replaces the file and the broker's session ends (KIP-368: franz-go
// re-authenticates a connection shortly before the session lifetime the
// broker gave, here 3 s), the connections re-authenticate with the new
// token, and writing goes on without an error.
func TestOAuthBearerTokenFileIsPickedUpAtReauthentication(t *testing.T) {
	t.Parallel()
	c, broker := newSASLBroker(t, "OAUTHBEARER", acceptTokens(3*time.Second, "token-A"))
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte("token-A\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(c)
	cfg.CreateTopics = true
	cfg.SASL = kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenFile: path,
		Extensions: map[string]string{"logicalCluster": "lkc-1", "identityPoolId": "pool-2"}}}
	streams := []record.Stream{{Source: "dns", Account: "acme"}}
	s, _ := startSink(t, cfg, streams, nil)
	written := 10
	write(t, s, makeBatch(t, "dns", "acme", 0, 0, written, 10))
	first := broker.seen()
	if len(first) == 0 {
		t.Fatal("the broker saw no OAUTHBEARER authentication")
	}
	for _, a := range first {
		if tok := tokenOf(t, a); tok != "token-A" || !a.ok {
			t.Fatalf("authenticated with %q (accepted %v), want token-A", tok, a.ok)
		}
		if _, ext, _ := bearer(a.bytes); ext["logicalCluster"] != "lkc-1" || ext["identityPoolId"] != "pool-2" {
			t.Fatalf("extensions %v", ext)
		}
	}

	// The refresher replaces the file; the broker then accepts only the
	// new token.
	broker.setCheck(acceptTokens(3*time.Second, "token-A", "token-B"))
	tmp := filepath.Join(dir, "token.new")
	if err := os.WriteFile(tmp, []byte("token-B\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	broker.setCheck(acceptTokens(3*time.Second, "token-B"))
	deadline := time.Now().Add(20 * time.Second)
	for page := 1; ; page++ {
		write(t, s, makeBatch(t, "dns", "acme", page, written, 10, 10))
		written += 10
		var sawB bool
		for _, a := range broker.seen()[len(first):] {
			sawB = sawB || tokenOf(t, a) == "token-B" && a.ok
		}
		if sawB {
			t.Logf("page %d: %d authentications before the change, %d after", page, len(first), len(broker.seen())-len(first))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no re-authentication with the new token within 20 s: %d authentications", len(broker.seen()))
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			return
		}
	}
	if recs := kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns"}); len(recs) != written {
		t.Errorf("read %d records, wrote %d", len(recs), written)
	}
}

// oauthIdP is a token endpoint that issues numbered tokens for the
// client-credentials grant of one client; the broker accepts what it
// issued.
type oauthIdP struct {
	srv    *httptest.Server
	mu     sync.Mutex
	issued map[string]bool
	calls  int
	refuse bool
}

const (
	idpClient = "collector"
	idpSecret = "idp-s3cr3t-never-logged"
)

func newIdP(t *testing.T) *oauthIdP {
	p := &oauthIdP{issued: map[string]bool{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.calls++
		id, sec, _ := r.BasicAuth()
		if p.refuse || id != idpClient || sec != idpSecret || r.FormValue("grant_type") != "client_credentials" || r.FormValue("scope") != "kafka" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		tok := fmt.Sprintf("issued-token-%d", len(p.issued)+1)
		p.issued[tok] = true
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *oauthIdP) accept(auth []byte) (bool, time.Duration, []byte, string) {
	tok, _, err := bearer(auth)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil || !p.issued[tok] {
		return false, 0, nil, "invalid token"
	}
	return true, 0, nil, ""
}

// OAUTHBEARER with a client-credentials grant: the sink asks the token
// endpoint once and authenticates every broker connection with that token
// (cached); the client secret and the token appear in no log line (debug
// level, franz-go's included) and in no error, also when the endpoint
// refuses the client.
func TestOAuthBearerClientCredentialsEndToEnd(t *testing.T) {
	t.Parallel()
	idp := newIdP(t)
	c, broker := newSASLBroker(t, "OAUTHBEARER", idp.accept, kfake.SeedTopics(1, "svc.dns"))
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := testConfig(c)
	cfg.SASL = kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{
		TokenURL: idp.srv.URL + "/token", ClientID: idpClient, ClientSecret: secret.New(idpSecret), Scopes: []string{"kafka"}}}
	streams := []record.Stream{{Source: "dns", Account: "acme"}}
	s, err := kafka.New(cfg, streams, t.TempDir(), nil, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for page := range 3 {
		write(t, s, makeBatch(t, "dns", "acme", page, page*10, 10, 10))
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	auths := broker.seen()
	if len(auths) < 2 {
		t.Fatalf("%d authentications; the producer and the metadata connection should both authenticate", len(auths))
	}
	for _, a := range auths {
		if !a.ok || tokenOf(t, a) != "issued-token-1" {
			t.Fatalf("authentication with %q (ok %v), want the one issued token", tokenOf(t, a), a.ok)
		}
	}
	idp.mu.Lock()
	calls := idp.calls
	idp.mu.Unlock()
	if calls != 1 {
		t.Errorf("%d token requests for %d authentications, want 1 (cached)", calls, len(auths))
	}
	if recs := kafkatest.ReadAll(t, c.ListenAddrs(), []string{"svc.dns"}); len(recs) != 30 {
		t.Errorf("read %d records, wrote 30", len(recs))
	}

	// A refused client: Start fails naming the key and the endpoint's
	// answer.
	idp.mu.Lock()
	idp.refuse = true
	idp.mu.Unlock()
	s2, err := kafka.New(cfg, streams, t.TempDir(), nil, log)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown(context.Background())
	ctx2, cancel2 := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel2()
	err = s2.Start(ctx2)
	if err == nil || !strings.Contains(err.Error(), "sink.kafka.sasl.oauth.token_url") || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("Start with a refused client = %v, want an error naming sink.kafka.sasl.oauth.token_url and invalid_client", err)
	}
	t.Logf("refused client: %v", err)
	for _, s := range []string{idpSecret, "issued-token-1"} {
		if strings.Contains(logs.String(), s) || strings.Contains(err.Error(), s) {
			t.Errorf("%q leaked into the logs or the error", s)
		}
	}
	if !strings.Contains(logs.String(), "token fetched") {
		t.Errorf("the token fetch is not in the debug log:\n%.2000s", logs.String())
	}
}

// mskCheck verifies an AWS_MSK_IAM authentication payload as the AWS
// documentation of Signature Version 4 (query-string signing) describes
// it, recomputed here from the payload's own fields: the fields Amazon
// MSK reads are all there, the credential scope names the access key,
// the region and the kafka-cluster service, the session token is the
// expected one, and the signature is the one the secret access key gives.
func mskCheck(t *testing.T, accessKey, secretKey, sessionToken, region string) func([]byte) (bool, time.Duration, []byte, string) {
	return func(auth []byte) (bool, time.Duration, []byte, string) {
		var p map[string]string
		if err := json.Unmarshal(auth, &p); err != nil {
			return false, 0, nil, "payload is not a JSON object of strings: " + err.Error()
		}
		date := p["x-amz-date"]
		if len(date) != 16 {
			return false, 0, nil, "x-amz-date " + date
		}
		scope := date[:8] + "/" + region + "/kafka-cluster/aws4_request"
		for k, want := range map[string]string{
			"version": "2020_10_22", "host": "127.0.0.1", "action": "kafka-cluster:Connect",
			"x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-credential": accessKey + "/" + scope,
			"x-amz-signedheaders": "host", "x-amz-expires": "300", "x-amz-security-token": sessionToken,
		} {
			if p[k] != want {
				return false, 0, nil, fmt.Sprintf("%s = %q, want %q", k, p[k], want)
			}
		}
		if p["user-agent"] == "" {
			return false, 0, nil, "no user-agent"
		}
		q := url.Values{}
		for k, name := range map[string]string{"action": "Action", "x-amz-algorithm": "X-Amz-Algorithm", "x-amz-credential": "X-Amz-Credential",
			"x-amz-date": "X-Amz-Date", "x-amz-expires": "X-Amz-Expires", "x-amz-signedheaders": "X-Amz-SignedHeaders", "x-amz-security-token": "X-Amz-Security-Token"} {
			if p[k] != "" {
				q.Set(name, p[k])
			}
		}
		emptyHash := sha256.Sum256(nil)
		canonical := "GET\n/\n" + strings.ReplaceAll(q.Encode(), "+", "%20") + "\nhost:" + p["host"] + "\n\nhost\n" + hex.EncodeToString(emptyHash[:])
		ch := sha256.Sum256([]byte(canonical))
		toSign := "AWS4-HMAC-SHA256\n" + date + "\n" + scope + "\n" + hex.EncodeToString(ch[:])
		mac := func(key []byte, s string) []byte {
			h := hmac.New(sha256.New, key)
			h.Write([]byte(s))
			return h.Sum(nil)
		}
		k := mac(mac(mac(mac([]byte("AWS4"+secretKey), date[:8]), region), "kafka-cluster"), "aws4_request")
		if sig := hex.EncodeToString(mac(k, toSign)); sig != p["x-amz-signature"] {
			return false, 0, nil, "signature does not verify with the secret access key"
		}
		return true, 0, []byte(`{"version":"2020_10_22","request-id":"test"}`), ""
	}
}

// AWS_MSK_IAM: the credentials come from the configuration (secret and
// session token inline or from files) or, without keys there, from the
// AWS SDK's default chain (here the environment variables, a shared
// credentials file, and an EKS web identity traded at an STS on
// loopback), and every connection sends a request signed with them for
// the region of AWS_REGION (the test broker's host, 127.0.0.1, names
// none). A wrong secret is refused by the same check. "collector check"
// (Check) reports where the credentials came from.
func TestAWSMSKIAMSignsWithTheConfiguredCredentials(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "secret")
	tokFile := filepath.Join(dir, "session")
	for p, v := range map[string]string{keyFile: "file-secret-key\n", tokFile: "file-session-token\n"} {
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	webKey, webSecret, webSession := awstest.Credentials("projected-sa-token")
	streams := []record.Stream{{Source: "dns", Account: "acme"}}
	for _, tt := range []struct {
		name                 string
		setup                func(t *testing.T, credentialsFile string)
		aws                  kafkasasl.AWSConfig
		key, secret, session string
		source               string
	}{
		{name: "environment", setup: func(t *testing.T, _ string) {
			t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret-key")
			t.Setenv("AWS_SESSION_TOKEN", "env-session")
		}, key: "AKIAENVEXAMPLE", secret: "env-secret-key", session: "env-session", source: "default chain: EnvConfigCredentials"},
		{name: "shared credentials file", setup: func(t *testing.T, creds string) {
			if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIAFILEEXAMPLE\naws_secret_access_key = shared-secret-key\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, key: "AKIAFILEEXAMPLE", secret: "shared-secret-key", source: "default chain: SharedConfigCredentials: "},
		{name: "web identity (EKS IRSA)", setup: func(t *testing.T, _ string) {
			tok := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(tok, []byte("projected-sa-token"), 0o600); err != nil {
				t.Fatal(err)
			}
			awstest.NewSTS(t, "arn:aws:iam::123456789012:role/collector").WebIdentity(t, tok)
		}, key: webKey, secret: webSecret, session: webSession, source: "default chain: WebIdentityCredentials"},
		{name: "configuration and files", aws: kafkasasl.AWSConfig{AccessKeyID: "ASIACFGEXAMPLE", SecretAccessKeyFile: keyFile, SessionTokenFile: tokFile},
			key: "ASIACFGEXAMPLE", secret: "file-secret-key", session: "file-session-token",
			source: "configuration: sink.kafka.sasl.aws.access_key_id with sink.kafka.sasl.aws.secret_access_key_file and .session_token_file"},
		{name: "inline key without session", aws: kafkasasl.AWSConfig{AccessKeyID: "AKIAINLINE", SecretAccessKey: secret.New("inline-secret")},
			key: "AKIAINLINE", secret: "inline-secret", source: "configuration: sink.kafka.sasl.aws.access_key_id with sink.kafka.sasl.aws.secret_access_key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			creds, _ := awstest.Isolate(t, "eu-central-1")
			if tt.setup != nil {
				tt.setup(t, creds)
			}
			c, broker := newSASLBroker(t, "AWS_MSK_IAM", mskCheck(t, tt.key, tt.secret, tt.session, "eu-central-1"), kfake.SeedTopics(1, "svc.dns"))
			cfg := testConfig(c)
			cfg.SASL = kafkasasl.Config{Mechanism: "AWS_MSK_IAM", AWS: tt.aws}
			s, _ := startSink(t, cfg, streams, nil)
			write(t, s, makeBatch(t, "dns", "acme", 0, 0, 10, 10))
			auths := broker.seen()
			if len(auths) == 0 {
				t.Fatal("no AWS_MSK_IAM authentication")
			}
			for _, a := range auths {
				if !a.ok {
					t.Fatalf("refused: %s", a.bytes)
				}
			}

			// The same check refuses a request signed with another secret.
			wrong, _, _, msg := mskCheck(t, tt.key, "not-"+tt.secret, tt.session, "eu-central-1")(auths[0].bytes)
			if wrong || !strings.Contains(msg, "signature") {
				t.Fatalf("the check accepted a signature made with another secret (%s)", msg)
			}

			// collector check says where the credentials came from, and
			// shows no secret.
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			rep, err := kafka.Check(ctx, cfg, streams)
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if !strings.HasPrefix(rep.Credentials, tt.source) || !strings.Contains(rep.String(), "sasl credentials: "+tt.source) {
				t.Errorf("check reports credentials %q, want %q:\n%s", rep.Credentials, tt.source, rep)
			}
			for _, sec := range []string{tt.secret, tt.session} {
				if sec != "" && strings.Contains(rep.String(), sec) {
					t.Errorf("the check report shows a secret:\n%s", rep)
				}
			}
		})
	}
}
