package kafkasasl_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
	"github.com/svcexport/collector/internal/testinfra/awstest"
)

// mskBroker is a broker host name that names its region, as Amazon MSK's
// do.
const mskBroker = "b-1.collector.abc123.c2.kafka.eu-west-1.amazonaws.com"

// firstMessage builds c's mechanism and returns what its authentication
// sends a broker first (the signed AWS_MSK_IAM payload), and the
// credential sources it reported.
func firstMessage(t *testing.T, c kafkasasl.Config, scr *secret.Scrubber) (map[string]string, []string) {
	t.Helper()
	var sources []string
	m, err := c.Build(kafkasasl.Options{Brokers: []string{mskBroker + ":9098"}, Scrubber: scr,
		CredentialSource: func(s string) { sources = append(sources, s) }})
	if err != nil {
		t.Fatal(err)
	}
	_, msg, err := m.Authenticate(context.Background(), mskBroker+":9098")
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	var p map[string]string
	if err := json.Unmarshal(msg, &p); err != nil {
		t.Fatalf("payload %q: %v", msg, err)
	}
	return p, sources
}

// signedBy checks that payload p carries accessKey and sessionToken (the
// signature itself is verified against a broker in package kafka).
func signedBy(t *testing.T, p map[string]string, accessKey, sessionToken string) {
	t.Helper()
	if got := p["x-amz-credential"]; !strings.HasPrefix(got, accessKey+"/") || !strings.Contains(got, "/eu-west-1/kafka-cluster/") {
		t.Errorf("x-amz-credential %q, want access key %s for eu-west-1", got, accessKey)
	}
	if got := p["x-amz-security-token"]; got != sessionToken {
		t.Errorf("x-amz-security-token %q, want %q", got, sessionToken)
	}
}

// AWS_MSK_IAM without keys in the configuration takes its credentials
// from the AWS SDK's default chain, driven here by what the SDK reads:
// the environment variables, then a shared credentials file and profile.
// The source is reported, never the secret.
func TestAWSDefaultChainFromEnvironmentAndSharedFiles(t *testing.T) {
	c := kafkasasl.Config{Mechanism: kafkasasl.AWSMSKIAM}

	t.Run("environment", func(t *testing.T) {
		awstest.Isolate(t, "eu-west-1")
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENVIRONMENT")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
		t.Setenv("AWS_SESSION_TOKEN", "env-session")
		scr := secret.NewScrubber()
		p, sources := firstMessage(t, c, scr)
		signedBy(t, p, "AKIAENVIRONMENT", "env-session")
		if len(sources) != 1 || sources[0] != "default chain: EnvConfigCredentials" {
			t.Errorf("sources %q", sources)
		}
		if got := scr.Scrub("env-secret env-session"); strings.Contains(got, "env-") {
			t.Errorf("the scrubber did not learn the secrets: %q", got)
		}
	})

	t.Run("shared credentials file and profile", func(t *testing.T) {
		creds, conf := awstest.Isolate(t, "eu-west-1")
		if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = default-secret\n\n"+
			"[collector]\naws_access_key_id = ASIAPROFILE\naws_secret_access_key = profile-secret\naws_session_token = profile-session\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(conf, []byte("[profile collector]\nregion = eu-west-1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AWS_PROFILE", "collector")
		p, sources := firstMessage(t, c, nil)
		signedBy(t, p, "ASIAPROFILE", "profile-session")
		if len(sources) != 1 || sources[0] != "default chain: SharedConfigCredentials: "+creds {
			t.Errorf("sources %q", sources)
		}
	})

	t.Run("static keys still win", func(t *testing.T) {
		awstest.Isolate(t, "eu-west-1")
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENVIRONMENT")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
		p, sources := firstMessage(t, kafkasasl.Config{Mechanism: kafkasasl.AWSMSKIAM, AWS: kafkasasl.AWSConfig{
			AccessKeyID: "AKIACONFIG", SecretAccessKey: secret.New("config-secret")}}, nil)
		signedBy(t, p, "AKIACONFIG", "")
		if len(sources) != 1 || sources[0] != "configuration: sink.kafka.sasl.aws.access_key_id with sink.kafka.sasl.aws.secret_access_key" {
			t.Errorf("sources %q", sources)
		}
	})
}

// EKS IAM roles for service accounts: the pod gets AWS_ROLE_ARN and a
// projected service account token in AWS_WEB_IDENTITY_TOKEN_FILE, which
// the kubelet rotates. The chain trades the token for temporary
// credentials at STS (here on loopback); when those expire, the next
// authentication asks again with the token file as it is then, so that a
// rotated token is used without a restart.
func TestAWSDefaultChainWebIdentityRereadsTheRotatedToken(t *testing.T) {
	awstest.Isolate(t, "eu-west-1")
	sts := awstest.NewSTS(t, "arn:aws:iam::123456789012:role/collector")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("token-1"), 0o600); err != nil {
		t.Fatal(err)
	}
	sts.WebIdentity(t, tokenFile)

	var sources []string
	m, err := kafkasasl.Config{Mechanism: kafkasasl.AWSMSKIAM}.Build(kafkasasl.Options{Brokers: []string{mskBroker + ":9098"},
		CredentialSource: func(s string) { sources = append(sources, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := sts.Tokens(); len(got) != 0 {
		t.Fatalf("Build asked STS already (%q): credentials are for the first authentication", got)
	}
	auth := func() map[string]string {
		t.Helper()
		_, msg, err := m.Authenticate(context.Background(), mskBroker+":9098")
		if err != nil {
			t.Fatalf("authenticate: %v", err)
		}
		var p map[string]string
		if err := json.Unmarshal(msg, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key, _, session := awstest.Credentials("token-1")
	signedBy(t, auth(), key, session)

	// The kubelet rotates the token (atomically, as it writes projected
	// volumes).
	tmp := tokenFile + ".new"
	if err := os.WriteFile(tmp, []byte("token-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, tokenFile); err != nil {
		t.Fatal(err)
	}
	key, _, session = awstest.Credentials("token-2")
	signedBy(t, auth(), key, session)
	if got := sts.Tokens(); len(got) != 2 || got[0] != "token-1" || got[1] != "token-2" {
		t.Errorf("STS saw tokens %q, want token-1 then token-2", got)
	}
	if len(sources) != 2 || sources[0] != "default chain: WebIdentityCredentials" {
		t.Errorf("sources %q", sources)
	}
}

// Without keys anywhere the chain finds nothing (the instance metadata
// service is off, so nothing leaves the machine): Build succeeds, and the
// first authentication fails naming the key and the chain.
func TestAWSDefaultChainWithoutCredentialsNamesTheKey(t *testing.T) {
	awstest.Isolate(t, "eu-west-1")
	m, err := kafkasasl.Config{Mechanism: kafkasasl.AWSMSKIAM}.Build(kafkasasl.Options{Brokers: []string{mskBroker + ":9098"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Authenticate(context.Background(), mskBroker+":9098")
	if err == nil || !strings.Contains(err.Error(), "sink.kafka.sasl.aws: no access_key_id set, and the AWS default credential chain found no credentials") {
		t.Fatalf("authenticate = %v, want an error naming sink.kafka.sasl.aws and the default chain", err)
	}
	t.Log(err)

	// A profile that does not exist is an error at Build.
	t.Setenv("AWS_PROFILE", "missing")
	if _, err := (kafkasasl.Config{Mechanism: kafkasasl.AWSMSKIAM}).Build(kafkasasl.Options{Brokers: []string{mskBroker + ":9098"}}); err == nil ||
		!strings.Contains(err.Error(), "sink.kafka.sasl.aws: no access_key_id set, and the AWS default credential chain cannot be loaded") {
		t.Fatalf("Build with a missing profile = %v", err)
	}
}
