package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink/kafka/kafkasasl"
)

// CheckFiles reports, as KeyErrors, every file the configuration names that
// cannot be used: a secret file that is missing, unreadable or empty (a
// secret that resolves to nothing would only fail later, at the first
// request, with a less helpful message), and a TLS file that cannot be
// read. A secret given inline wins over its file (as the clients resolve
// them), so its file is not read. The commands that contact the API or a
// sink call it after Load; `state` does not need secrets.
func (c Config) CheckFiles() error {
	var errs []error
	secretFile := func(key string, inline secret.Secret, path string) {
		if inline.IsSet() || path == "" {
			return
		}
		s, err := secret.FromFile(path)
		switch {
		case err != nil:
			errs = append(errs, &KeyError{Key: key, Msg: fileProblem(path, err)})
		case strings.TrimSpace(s.Reveal()) == "":
			errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf("file %s is empty", path)})
		}
	}
	readable := func(key, path string) {
		if path == "" {
			return
		}
		b, err := os.ReadFile(path)
		switch {
		case err != nil:
			errs = append(errs, &KeyError{Key: key, Msg: fileProblem(path, err)})
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

// fileProblem says why path cannot be used, without its content.
func fileProblem(path string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("file %s does not exist", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("file %s is not readable by this user", path)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("file %s cannot be read: %v", path, pe.Err)
	}
	return fmt.Sprintf("file %s cannot be read: %v", path, err)
}
