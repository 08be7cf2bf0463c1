package kafkasasl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
)

const p = "sink.kafka.sasl"

func TestValidConfigs(t *testing.T) {
	for name, c := range map[string]kafkasasl.Config{
		"off":             {},
		"scram":           {Mechanism: "SCRAM-SHA-512", Username: "u", PasswordFile: "/run/pw"},
		"oauth token":     {Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{Token: secret.New("t")}},
		"oauth file":      {Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenFile: "/run/token", Extensions: map[string]string{"logicalCluster": "lkc-1"}}},
		"oauth grant":     {Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenURL: "https://idp.example/token", ClientID: "c", ClientSecretFile: "/run/cs", ClientAuth: "post", Scopes: []string{"kafka", "api://x/.default"}}},
		"aws environment": {Mechanism: "AWS_MSK_IAM"},
		"aws keys":        {Mechanism: "AWS_MSK_IAM", AWS: kafkasasl.AWSConfig{AccessKeyID: "AKIAEXAMPLE", SecretAccessKeyFile: "/run/key", SessionTokenFile: "/run/session"}},
	} {
		if err := c.Validate(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Validation names the key of every mistake (exit 2 with that line).
func TestInvalidConfigsNameTheKey(t *testing.T) {
	oauth := func(o kafkasasl.OAuthConfig) kafkasasl.Config {
		return kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: o}
	}
	aws := func(a kafkasasl.AWSConfig) kafkasasl.Config {
		return kafkasasl.Config{Mechanism: "AWS_MSK_IAM", AWS: a}
	}
	for _, tt := range []struct {
		name string
		c    kafkasasl.Config
		want string
	}{
		{"unknown mechanism", kafkasasl.Config{Mechanism: "GSSAPI"}, p + `.mechanism: unknown mechanism "GSSAPI" (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, AWS_MSK_IAM)`},
		{"oauth keys without mechanism", kafkasasl.Config{OAuth: kafkasasl.OAuthConfig{TokenFile: "/t"}}, p + ".mechanism: must be set"},
		{"aws keys without mechanism", kafkasasl.Config{AWS: kafkasasl.AWSConfig{AccessKeyID: "A"}}, p + ".mechanism: must be set"},
		{"oauth keys with scram", kafkasasl.Config{Mechanism: "SCRAM-SHA-256", Username: "u", Password: secret.New("x"), OAuth: kafkasasl.OAuthConfig{TokenFile: "/t"}}, p + ".oauth: is only used with " + p + ".mechanism OAUTHBEARER"},
		{"a username with oauth", kafkasasl.Config{Mechanism: "OAUTHBEARER", Username: "u", OAuth: kafkasasl.OAuthConfig{TokenFile: "/t"}}, p + ".username: is only used"},
		{"no token", oauth(kafkasasl.OAuthConfig{}), p + ".oauth.token_url: OAUTHBEARER needs a token"},
		{"two tokens", oauth(kafkasasl.OAuthConfig{Token: secret.New("t"), TokenFile: "/t"}), p + ".oauth.token: set only one of"},
		{"a grant without client", oauth(kafkasasl.OAuthConfig{TokenURL: "https://idp/token", ClientSecret: secret.New("s")}), p + ".oauth.client_id: must be set with " + p + ".oauth.token_url"},
		{"a grant without secret", oauth(kafkasasl.OAuthConfig{TokenURL: "https://idp/token", ClientID: "c"}), p + ".oauth.client_secret: must be set (or " + p + ".oauth.client_secret_file)"},
		{"a token url that is no URL", oauth(kafkasasl.OAuthConfig{TokenURL: "idp/token", ClientID: "c", ClientSecret: secret.New("s")}), p + `.oauth.token_url: "idp/token" is not an http(s) URL`},
		{"credentials in the token url", oauth(kafkasasl.OAuthConfig{TokenURL: "https://c:s@idp/token", ClientID: "c", ClientSecret: secret.New("s")}), p + ".oauth.token_url: must not hold credentials"},
		{"an unknown client auth", oauth(kafkasasl.OAuthConfig{TokenURL: "https://idp/token", ClientID: "c", ClientSecret: secret.New("s"), ClientAuth: "jwt"}), p + `.oauth.client_auth: unknown method "jwt" (basic, post)`},
		{"a bad scope", oauth(kafkasasl.OAuthConfig{TokenURL: "https://idp/token", ClientID: "c", ClientSecret: secret.New("s"), Scopes: []string{"a b"}}), p + `.oauth.scopes: entry 0 "a b"`},
		{"a client id without token url", oauth(kafkasasl.OAuthConfig{Token: secret.New("t"), ClientID: "c"}), p + ".oauth.client_id: is only used with " + p + ".oauth.token_url"},
		{"scopes without token url", oauth(kafkasasl.OAuthConfig{TokenFile: "/t", Scopes: []string{"kafka"}}), p + ".oauth.scopes: is only used with"},
		{"a bad extension key", oauth(kafkasasl.OAuthConfig{TokenFile: "/t", Extensions: map[string]string{"auth": "x"}}), p + `.oauth.extensions: key "auth"`},
		{"a secret without key id", aws(kafkasasl.AWSConfig{SecretAccessKey: secret.New("s")}), p + ".aws.access_key_id: must be set with"},
		{"a key id without secret", aws(kafkasasl.AWSConfig{AccessKeyID: "AKIAEXAMPLE"}), p + ".aws.secret_access_key: must be set (or " + p + ".aws.secret_access_key_file)"},
		{"a session token without key id", aws(kafkasasl.AWSConfig{SessionTokenFile: "/s"}), p + ".aws.access_key_id: must be set"},
		{"a password with aws", kafkasasl.Config{Mechanism: "AWS_MSK_IAM", Password: secret.New("x")}, p + ".username: is only used"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v\nwant an error containing %q", err, tt.want)
			}
			for _, s := range []string{"hunter2", "s3cr3t"} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("error holds a secret: %v", err)
				}
			}
		})
	}
}

// Build reads every file and variable at once, so that a missing one is a
// start-up error naming its key; and an AWS_MSK_IAM broker whose region
// nothing tells is one too.
func TestBuildNamesMissingFilesAndVariables(t *testing.T) {
	dir := t.TempDir()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tt := range []struct {
		name string
		c    kafkasasl.Config
		o    kafkasasl.Options
		want string
	}{
		{"a missing token file", kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenFile: dir + "/none"}}, kafkasasl.Options{}, p + ".oauth.token_file: "},
		{"an empty token file", kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenFile: fileIn(t, dir, "empty", " \n")}}, kafkasasl.Options{}, p + ".oauth.token_file: file " + dir + "/empty is empty"},
		{"a missing client secret file", kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenURL: "https://idp/t", ClientID: "c", ClientSecretFile: dir + "/none"}}, kafkasasl.Options{}, p + ".oauth.client_secret_file: "},
		{"a missing secret key file", kafkasasl.Config{Mechanism: "AWS_MSK_IAM", AWS: kafkasasl.AWSConfig{AccessKeyID: "AKIAEXAMPLE", SecretAccessKeyFile: dir + "/none"}}, kafkasasl.Options{Getenv: env("AWS_REGION", "eu-west-1")}, p + ".aws.secret_access_key_file: "},
		{"no region", kafkasasl.Config{Mechanism: "AWS_MSK_IAM"}, kafkasasl.Options{Brokers: []string{"10.0.0.1:9098"}, Getenv: env("AWS_ACCESS_KEY_ID", "A", "AWS_SECRET_ACCESS_KEY", "s3cr3t")}, p + ".mechanism: AWS_MSK_IAM signs for a region, and broker 10.0.0.1:9098 does not name one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := tt.c.Build(tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Build = %v, %v\nwant an error containing %q", m, err, tt.want)
			}
		})
	}
	ok := []struct {
		c kafkasasl.Config
		o kafkasasl.Options
	}{
		{kafkasasl.Config{Mechanism: "AWS_MSK_IAM"}, kafkasasl.Options{Brokers: []string{"b-1.msk.abc.c2.kafka.eu-central-1.amazonaws.com:9098"},
			Getenv: env("AWS_ACCESS_KEY_ID", "A", "AWS_SECRET_ACCESS_KEY", "s3cr3t")}},
		{kafkasasl.Config{Mechanism: "OAUTHBEARER", OAuth: kafkasasl.OAuthConfig{TokenFile: fileIn(t, dir, "tok", "abc\n")}}, kafkasasl.Options{}},
		{kafkasasl.Config{}, kafkasasl.Options{}},
	}
	for i, tt := range ok {
		if _, err := tt.c.Build(tt.o); err != nil {
			t.Errorf("case %d: %v", i, err)
		}
	}
}

func fileIn(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
