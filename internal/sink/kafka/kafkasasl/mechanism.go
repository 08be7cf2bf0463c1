package kafkasasl

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/svcexport/collector/internal/secret"
)

// Options are what Build needs besides the configuration. The zero
// value is usable, with the defaults stated per field.
type Options struct {
	// Prefix is the configuration path of the Config, for messages.
	// Default "sink.kafka.sasl".
	Prefix string
	// Brokers are the seed brokers (host:port): AWS_MSK_IAM takes the
	// region from their host names when it can.
	Brokers []string
	// Log receives warnings (a failed token refresh while the cached
	// token is still valid) and, at debug level, token fetches. No line
	// holds a secret. Default: discarded.
	Log *slog.Logger
	// HTTPClient sends token requests. Default: a client of its own with
	// TokenTimeout that follows no redirect (a redirect could carry the
	// client secret to another host).
	HTTPClient *http.Client
	// TokenTimeout bounds one token request. Default DefaultTokenTimeout.
	TokenTimeout time.Duration
	// Getenv reads AWS_REGION and AWS_DEFAULT_REGION, to tell whether
	// AWS_MSK_IAM knows its signing region. Default os.Getenv. (The AWS
	// default credential chain reads the process's environment itself.)
	Getenv func(string) string
	// CredentialSource, when set, is told at each AWS_MSK_IAM
	// authentication where its credentials came from: the configuration
	// keys, or "default chain: " and the SDK provider's name
	// (EnvConfigCredentials, SharedConfigCredentials: FILE,
	// WebIdentityCredentials, CredentialsEndpointProvider,
	// EC2RoleProvider, SSOProvider, ...). It never holds a secret.
	// "collector check" reports it; the mechanism also logs it at info
	// level whenever it changes.
	CredentialSource func(source string)
	// Now is the clock of the token cache. Default time.Now.
	Now func() time.Time
	// Scrubber removes secrets from the errors and log lines that hold a
	// token endpoint's words (an endpoint that echoes the request): the
	// process's one (secret.Scrubber). Build adds every secret it reads
	// to it, each time it reads one (a file rewritten with a new secret).
	// Default: a scrubber of this configuration's secrets alone.
	Scrubber *secret.Scrubber
}

func (o *Options) defaults() {
	if o.Prefix == "" {
		o.Prefix = "sink.kafka.sasl"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.TokenTimeout <= 0 {
		o.TokenTimeout = DefaultTokenTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{
			Timeout:       o.TokenTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Scrubber == nil {
		o.Scrubber = secret.NewScrubber()
	}
}

// Build returns the franz-go mechanism of c, nil when SASL is off. It
// validates c, and reads now every file and variable it needs (password,
// token file, client secret file, AWS keys, the AWS shared configuration
// of the default credential chain), so that a missing one is an error
// naming its key at start; files whose content may change are read again
// at each authentication. It sends no request: a token URL, and the
// default chain's providers (STS, the container endpoint, IMDS), are
// first asked when a broker connection authenticates.
func (c Config) Build(o Options) (sasl.Mechanism, error) {
	o.defaults()
	if err := c.Validate(o.Prefix); err != nil {
		return nil, err
	}
	p := o.Prefix
	switch c.Mechanism {
	case "":
		return nil, nil
	case Plain, ScramSHA256, ScramSHA512:
		pw, err := readSecret(p+".password", c.Password, p+".password_file", c.PasswordFile)
		if err != nil {
			return nil, err
		}
		o.Scrubber.Add(secret.New(pw))
		switch c.Mechanism {
		case Plain:
			return plain.Auth{User: c.Username, Pass: pw}.AsMechanism(), nil
		case ScramSHA256:
			return scram.Auth{User: c.Username, Pass: pw}.AsSha256Mechanism(), nil
		default:
			return scram.Auth{User: c.Username, Pass: pw}.AsSha512Mechanism(), nil
		}
	case OAuthBearer:
		token, err := c.OAuth.tokenFunc(p+".oauth", o)
		if err != nil {
			return nil, err
		}
		ext := c.OAuth.Extensions
		return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
			t, err := token(ctx)
			if err != nil {
				return oauth.Auth{}, err
			}
			return oauth.Auth{Token: t, Extensions: ext}, nil
		}), nil
	case AWSMSKIAM:
		creds, err := c.AWS.credentials(p+".aws", o.Scrubber)
		if err != nil {
			return nil, err
		}
		if err := checkRegion(o.Brokers, o.Getenv); err != nil {
			return nil, fmt.Errorf("%s.mechanism: %w", p, err)
		}
		var mu sync.Mutex
		last := ""
		return aws.ManagedStreamingIAM(func(ctx context.Context) (aws.Auth, error) {
			auth, source, err := creds(ctx)
			if err != nil {
				return auth, err
			}
			mu.Lock()
			changed := source != last
			last = source
			mu.Unlock()
			if changed {
				o.Log.Info("AWS_MSK_IAM credentials", "source", source)
			}
			if o.CredentialSource != nil {
				o.CredentialSource(source)
			}
			return auth, nil
		}), nil
	}
	return nil, fmt.Errorf("%s.mechanism: unknown mechanism %q", p, c.Mechanism)
}

// tokenFunc returns where each authentication takes its token.
func (o OAuthConfig) tokenFunc(p string, opts Options) (func(context.Context) (string, error), error) {
	switch {
	case o.Token.IsSet():
		t := strings.TrimSpace(o.Token.Reveal())
		opts.Scrubber.Add(secret.New(t))
		return func(context.Context) (string, error) { return t, nil }, nil
	case o.TokenFile != "":
		read := scrubbed(opts.Scrubber, "", fileSecret(p+".token_file", o.TokenFile))
		if _, err := read(); err != nil {
			return nil, err
		}
		return func(context.Context) (string, error) { return read() }, nil
	}
	cs := func() (string, error) { return o.ClientSecret.Reveal(), nil }
	if !o.ClientSecret.IsSet() {
		cs = fileSecret(p+".client_secret_file", o.ClientSecretFile)
	}
	// The client secret travels in a form body or in HTTP Basic with the
	// client id: the scrubber learns both.
	cs = scrubbed(opts.Scrubber, o.ClientID, cs)
	if _, err := cs(); err != nil {
		return nil, err
	}
	src := &clientCredentials{
		key: p + ".token_url", url: o.TokenURL, clientID: o.ClientID, secret: cs,
		post: o.ClientAuth == ClientAuthPost, scopes: o.Scopes,
		client: opts.HTTPClient, now: opts.Now, log: opts.Log, scrub: opts.Scrubber, sem: make(chan struct{}, 1),
	}
	return src.Token, nil
}

// readSecret resolves an inline secret or its file once; an empty one is
// an error naming the key.
func readSecret(key string, inline secret.Secret, fileKey, file string) (string, error) {
	if inline.IsSet() {
		return inline.Reveal(), nil
	}
	return fileSecret(fileKey, file)()
}

// scrubbed returns read that adds each value it reads to scr (with user
// set, as the password of HTTP Basic credentials of user: AddBasic), so
// that no error shows it, a value read anew from a rewritten file
// included.
func scrubbed(scr *secret.Scrubber, user string, read func() (string, error)) func() (string, error) {
	return func() (string, error) {
		v, err := read()
		if err == nil {
			if user != "" {
				scr.AddBasic(user, secret.New(v))
			} else {
				scr.Add(secret.New(v))
			}
		}
		return v, err
	}
}

// fileSecret returns a reader of the secret in path: the file's content
// without surrounding white space, read at every call, so that a file an
// outside process rewrites is picked up at the next authentication. Its
// errors name key and the file, never the content.
func fileSecret(key, path string) func() (string, error) {
	return func() (string, error) {
		s, err := secret.FromFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		v := strings.TrimSpace(s.Reveal())
		if v == "" {
			return "", fmt.Errorf("%s: file %s is empty", key, path)
		}
		return v, nil
	}
}

// awsSuffixes are the host name suffixes franz-go's aws package reads a
// region from.
var awsSuffixes = []string{".amazonaws.com", ".amazonaws.com.cn", ".c2s.ic.gov", ".sc2s.sgov.gov"}

// checkRegion fails when franz-go could not tell the signing region of
// some broker: neither its host name (REGION.amazonaws.com) nor
// AWS_REGION or AWS_DEFAULT_REGION say it.
func checkRegion(brokers []string, getenv func(string) string) error {
	if getenv("AWS_REGION") != "" || getenv("AWS_DEFAULT_REGION") != "" {
		return nil
	}
	for _, b := range brokers {
		host, _, err := net.SplitHostPort(b)
		if err != nil {
			host = b
		}
		ok := false
		for _, s := range awsSuffixes {
			if rest, found := strings.CutSuffix(host, s); found && strings.Contains(rest, ".") {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("AWS_MSK_IAM signs for a region, and broker %s does not name one (REGION.amazonaws.com): set AWS_REGION", b)
		}
	}
	return nil
}
