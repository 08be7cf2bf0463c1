package kafkasasl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/secret"
)

// Mechanisms.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
	AWSMSKIAM   = "AWS_MSK_IAM"
)

// mechanisms lists the accepted names in the order messages show them.
const mechanisms = "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, AWS_MSK_IAM"

// Values of OAuthConfig.ClientAuth.
const (
	// ClientAuthBasic sends client_id and client_secret as HTTP Basic
	// authentication, as RFC 6749 section 2.3.1 recommends.
	ClientAuthBasic = "basic"
	// ClientAuthPost sends them as form parameters of the request body,
	// for token endpoints configured for client_secret_post.
	ClientAuthPost = "post"
)

// DefaultTokenTimeout bounds one token request.
const DefaultTokenTimeout = 30 * time.Second

// Config configures SASL authentication (keys under sink.kafka.sasl). The
// zero value turns SASL off.
type Config struct {
	// Mechanism is PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or
	// AWS_MSK_IAM; empty turns SASL off. Default empty.
	Mechanism string `koanf:"mechanism"`
	// Username is the SASL user of PLAIN and SCRAM.
	Username string `koanf:"username"`
	// Password is the SASL password of PLAIN and SCRAM, usually from the
	// environment (COLLECTOR_SINK__KAFKA__SASL__PASSWORD). It wins over
	// PasswordFile.
	Password secret.Secret `koanf:"password"`
	// PasswordFile is a file holding the password (one trailing newline
	// is ignored).
	PasswordFile string `koanf:"password_file"`
	// OAuth configures OAUTHBEARER (keys under sink.kafka.sasl.oauth).
	OAuth OAuthConfig `koanf:"oauth"`
	// AWS configures AWS_MSK_IAM (keys under sink.kafka.sasl.aws).
	AWS AWSConfig `koanf:"aws"`
}

// OAuthConfig is where OAUTHBEARER takes its token: exactly one of Token,
// TokenFile and TokenURL.
type OAuthConfig struct {
	// Token is a static bearer token, usually from the environment
	// (COLLECTOR_SINK__KAFKA__SASL__OAUTH__TOKEN). It cannot be renewed
	// without a restart: prefer TokenFile or TokenURL.
	Token secret.Secret `koanf:"token"`
	// TokenFile is a file holding the token (surrounding white space
	// ignored), read at every authentication when it changed since the
	// last read: an outside process (a sidecar, a cron job) refreshes it,
	// and the brokers' re-authentication (KIP-368) picks the new token up.
	TokenFile string `koanf:"token_file"`
	// TokenURL is the OAuth 2.0 token endpoint of a client-credentials
	// grant (RFC 6749 section 4.4): the sink asks it for a token, keeps
	// the token until a quarter of its lifetime (at most a minute) before
	// it expires, then asks again.
	TokenURL string `koanf:"token_url"`
	// ClientID is the client of the grant; required with TokenURL.
	ClientID string `koanf:"client_id"`
	// ClientSecret is the client's secret, usually from the environment
	// (COLLECTOR_SINK__KAFKA__SASL__OAUTH__CLIENT_SECRET). It wins over
	// ClientSecretFile. One of them is required with TokenURL.
	ClientSecret secret.Secret `koanf:"client_secret"`
	// ClientSecretFile is a file holding the client secret, read at every
	// token request.
	ClientSecretFile string `koanf:"client_secret_file"`
	// ClientAuth is how the client authenticates to the token endpoint:
	// "basic" (HTTP Basic, default) or "post" (form parameters).
	ClientAuth string `koanf:"client_auth"`
	// Scopes are the scopes asked for (the scope parameter); empty asks
	// for the client's default scopes.
	Scopes []string `koanf:"scopes"`
	// Extensions are SASL extensions sent with the token (RFC 7628
	// section 3.1), e.g. logicalCluster and identityPoolId for Confluent
	// Cloud.
	Extensions map[string]string `koanf:"extensions"`
}

// AWSConfig is where AWS_MSK_IAM takes its credentials: AccessKeyID with
// the secret access key, or, when every key is empty, the AWS SDK's
// default credential chain: the environment variables AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, the shared credentials and
// config files (AWS_PROFILE, SSO), a web identity token (EKS IAM roles
// for service accounts), the container credentials endpoint (EKS Pod
// Identity, ECS) and the EC2 instance role, asked again before
// temporary credentials expire. The region comes from the broker's host
// name (*.amazonaws.com) or AWS_REGION (AWS_DEFAULT_REGION).
type AWSConfig struct {
	// AccessKeyID is the access key id (AKIA... or, with a session token,
	// ASIA...).
	AccessKeyID string `koanf:"access_key_id"`
	// SecretAccessKey is the secret access key, usually from the
	// environment (COLLECTOR_SINK__KAFKA__SASL__AWS__SECRET_ACCESS_KEY).
	// It wins over SecretAccessKeyFile.
	SecretAccessKey secret.Secret `koanf:"secret_access_key"`
	// SecretAccessKeyFile is a file holding the secret access key, read
	// at every authentication (rotated keys are picked up).
	SecretAccessKeyFile string `koanf:"secret_access_key_file"`
	// SessionToken is the session token of temporary credentials. It wins
	// over SessionTokenFile.
	SessionToken secret.Secret `koanf:"session_token"`
	// SessionTokenFile is a file holding the session token, read at every
	// authentication, so that an outside process can renew temporary
	// credentials (with SecretAccessKeyFile and AccessKeyID).
	SessionTokenFile string `koanf:"session_token_file"`
}

// Validate reports every invalid key under prefix (sink.kafka.sasl),
// naming it, joined with errors.Join; nil when c is usable. It reads no
// file and no environment: Mechanism does.
func (c Config) Validate(prefix string) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", prefix, key, fmt.Sprintf(format, args...)))
	}
	userSet := c.Username != "" || c.Password.IsSet() || c.PasswordFile != ""
	oauthSet := c.OAuth.set()
	awsSet := c.AWS.set()
	only := func(set bool, key, mech string) {
		if set {
			add(key, "is only used with %s.mechanism %s (it is %q)", prefix, mech, c.Mechanism)
		}
	}
	switch c.Mechanism {
	case "":
		if userSet || oauthSet || awsSet {
			add("mechanism", "must be set (%s) when credentials are given", mechanisms)
		}
		return errors.Join(errs...)
	case Plain, ScramSHA256, ScramSHA512:
		if c.Username == "" {
			add("username", "must be set with %s.mechanism %s", prefix, c.Mechanism)
		}
		if !c.Password.IsSet() && c.PasswordFile == "" {
			add("password", "must be set (or %s.password_file) with %s.mechanism %s", prefix, prefix, c.Mechanism)
		}
		only(oauthSet, "oauth", OAuthBearer)
		only(awsSet, "aws", AWSMSKIAM)
	case OAuthBearer:
		only(userSet, "username", "PLAIN or SCRAM (username, password, password_file)")
		only(awsSet, "aws", AWSMSKIAM)
		errs = append(errs, c.OAuth.validate(prefix+".oauth")...)
	case AWSMSKIAM:
		only(userSet, "username", "PLAIN or SCRAM (username, password, password_file)")
		only(oauthSet, "oauth", OAuthBearer)
		errs = append(errs, c.AWS.validate(prefix+".aws")...)
	default:
		add("mechanism", "unknown mechanism %q (%s)", c.Mechanism, mechanisms)
	}
	return errors.Join(errs...)
}

func (o OAuthConfig) set() bool {
	return o.Token.IsSet() || o.TokenFile != "" || o.TokenURL != "" || o.ClientID != "" ||
		o.ClientSecret.IsSet() || o.ClientSecretFile != "" || o.ClientAuth != "" || len(o.Scopes) > 0 || len(o.Extensions) > 0
}

func (o OAuthConfig) validate(p string) []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", p, key, fmt.Sprintf(format, args...)))
	}
	sources := 0
	for _, set := range []bool{o.Token.IsSet(), o.TokenFile != "", o.TokenURL != ""} {
		if set {
			sources++
		}
	}
	switch {
	case sources == 0:
		add("token_url", "OAUTHBEARER needs a token: set one of %s.token, %s.token_file or %s.token_url (with client_id and client_secret)", p, p, p)
	case sources > 1:
		add("token", "set only one of %s.token, %s.token_file and %s.token_url", p, p, p)
	}
	if o.TokenURL == "" {
		for _, f := range []struct {
			key string
			set bool
		}{{"client_id", o.ClientID != ""}, {"client_secret", o.ClientSecret.IsSet()}, {"client_secret_file", o.ClientSecretFile != ""},
			{"client_auth", o.ClientAuth != ""}, {"scopes", len(o.Scopes) > 0}} {
			if f.set {
				add(f.key, "is only used with %s.token_url", p)
			}
		}
	} else {
		if u, err := url.Parse(o.TokenURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			add("token_url", "%q is not an http(s) URL", redactURL(o.TokenURL))
		} else if u.User != nil {
			add("token_url", "must not hold credentials (set %s.client_id and %s.client_secret)", p, p)
		}
		if o.ClientID == "" {
			add("client_id", "must be set with %s.token_url", p)
		}
		if !o.ClientSecret.IsSet() && o.ClientSecretFile == "" {
			add("client_secret", "must be set (or %s.client_secret_file) with %s.token_url", p, p)
		}
		switch o.ClientAuth {
		case "", ClientAuthBasic, ClientAuthPost:
		default:
			add("client_auth", "unknown method %q (%s, %s)", o.ClientAuth, ClientAuthBasic, ClientAuthPost)
		}
		for i, s := range o.Scopes {
			if s == "" || strings.ContainsAny(s, " \"\\") {
				add("scopes", "entry %d %q is not a scope token (RFC 6749 section 3.3)", i, s)
			}
		}
	}
	for k, v := range o.Extensions {
		// RFC 7628 section 3.1: key 1*ALPHA, value without control
		// characters other than space, tab, CR and LF; "auth" is reserved.
		if !validExtKey(k) {
			add("extensions", "key %q must be letters only and not \"auth\"", k)
		}
		if strings.ContainsRune(v, '\x01') {
			add("extensions", "value of %q holds the separator \\x01", k)
		}
	}
	return errs
}

func validExtKey(k string) bool {
	if k == "" || k == "auth" {
		return false
	}
	for _, r := range k {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

func (a AWSConfig) set() bool {
	return a.AccessKeyID != "" || a.SecretAccessKey.IsSet() || a.SecretAccessKeyFile != "" ||
		a.SessionToken.IsSet() || a.SessionTokenFile != ""
}

func (a AWSConfig) validate(p string) []error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", p, key, fmt.Sprintf(format, args...)))
	}
	secretSet := a.SecretAccessKey.IsSet() || a.SecretAccessKeyFile != ""
	switch {
	case a.AccessKeyID == "" && (secretSet || a.SessionToken.IsSet() || a.SessionTokenFile != ""):
		add("access_key_id", "must be set with %s.secret_access_key or %s.session_token (leave all empty to use the AWS default credential chain)", p, p)
	case a.AccessKeyID != "" && !secretSet:
		add("secret_access_key", "must be set (or %s.secret_access_key_file) with %s.access_key_id", p, p)
	}
	if a.AccessKeyID != "" && strings.ContainsAny(a.AccessKeyID, " /\t\r\n") {
		add("access_key_id", "%q is not an access key id", a.AccessKeyID)
	}
	return errs
}

// redactURL is u without its user information and query, for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
