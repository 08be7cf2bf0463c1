package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
	"github.com/svcexport/collector/internal/tap"
)

// MaxTLSFileBytes bounds a TLS file (a CA bundle, a certificate chain, a
// key) as CheckFiles reads it: the largest public CA bundles are a few
// hundred KiB.
const MaxTLSFileBytes = 4 << 20

// CheckFiles reports, as KeyErrors, every file the configuration names that
// cannot be used: a secret file that is missing, unreadable, empty (a
// secret that resolves to nothing would only fail later, at the first
// request, with a less helpful message), not a regular file or over
// secret.MaxFileBytes (/dev/zero would be read until the memory runs out,
// a named pipe would hang: issue 20), and a TLS file that cannot be read,
// is not a regular file or is over MaxTLSFileBytes. A secret given inline wins over its file (as the clients resolve
// them), so its file is not read. The commands that contact the API or a
// sink call it after Load; `state` does not need secrets.
func (c Config) CheckFiles() error {
	var errs []error
	secretFile := func(key string, inline secret.Secret, path string) {
		if inline.IsSet() || path == "" {
			return
		}
		b, err := secret.ReadFile(path, secret.MaxFileBytes)
		switch {
		case err != nil:
			errs = append(errs, &KeyError{Key: key, Msg: secret.FileProblem(path, err)})
		case strings.TrimSpace(string(b)) == "":
			errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf("file %s is empty", path)})
		}
	}
	readable := func(key, path string) {
		if path == "" {
			return
		}
		b, err := secret.ReadFile(path, MaxTLSFileBytes)
		switch {
		case err != nil:
			errs = append(errs, &KeyError{Key: key, Msg: secret.FileProblem(path, err)})
		case len(strings.TrimSpace(string(b))) == 0:
			errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf("file %s is empty", path)})
		}
	}
	if !c.Simulator.Enabled || c.API.SecretFile != "" {
		secretFile("api.secret_file", c.API.Secret, c.API.SecretFile)
	}
	if c.Edge.BaseURL != "" || c.Edge.TokenFile != "" {
		secretFile("edge.token_file", c.Edge.Token, c.Edge.TokenFile)
	}
	if t := c.Metrics.Tap; t.Enabled && t.TokenFile != "" {
		// What /tap reads at every tap, read now: a missing or short
		// token fails the start, not the first tap.
		if _, err := tap.ReadToken(t.TokenFile); err != nil {
			errs = append(errs, &KeyError{Key: "metrics.tap.token_file", Msg: err.Error()})
		}
	}
	if r := c.Metrics.Reload; r.Enabled && r.TokenFile != "" {
		// What POST /-/reload reads at every request, read now.
		if _, err := tap.ReadToken(r.TokenFile); err != nil {
			errs = append(errs, &KeyError{Key: "metrics.reload.token_file", Msg: err.Error()})
		}
	}
	for _, sk := range c.Sinks() {
		p := sk.Key() + "."
		switch k, ch := sk.Kafka, sk.ClickHouse; sk.Type {
		case SinkKafka:
			switch k.SASL.Mechanism {
			case "":
			case kafkasasl.OAuthBearer:
				o := k.SASL.OAuth
				secretFile(p+"kafka.sasl.oauth.token_file", o.Token, o.TokenFile)
				secretFile(p+"kafka.sasl.oauth.client_secret_file", o.ClientSecret, o.ClientSecretFile)
			case kafkasasl.AWSMSKIAM:
				a := k.SASL.AWS
				secretFile(p+"kafka.sasl.aws.secret_access_key_file", a.SecretAccessKey, a.SecretAccessKeyFile)
				secretFile(p+"kafka.sasl.aws.session_token_file", a.SessionToken, a.SessionTokenFile)
			default:
				secretFile(p+"kafka.sasl.password_file", k.SASL.Password, k.SASL.PasswordFile)
			}
			if k.TLS.Enabled {
				readable(p+"kafka.tls.ca_file", k.TLS.CAFile)
				readable(p+"kafka.tls.cert_file", k.TLS.CertFile)
				readable(p+"kafka.tls.key_file", k.TLS.KeyFile)
			}
		case SinkClickHouse:
			secretFile(p+"clickhouse.password_file", ch.Password, ch.PasswordFile)
			if ch.TLS.Enabled {
				readable(p+"clickhouse.tls.ca_file", ch.TLS.CAFile)
				readable(p+"clickhouse.tls.cert_file", ch.TLS.CertFile)
				readable(p+"clickhouse.tls.key_file", ch.TLS.KeyFile)
			}
		}
	}
	return errors.Join(errs...)
}
