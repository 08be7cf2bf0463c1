package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Config is a TLS client configuration (keys under SECTION.tls). The zero
// value is TLS off and valid.
type Config struct {
	// Enabled turns TLS on. Default false.
	Enabled bool `koanf:"enabled"`
	// CAFile is a PEM bundle of the CAs trusted to sign the server's
	// certificate; empty means the system roots.
	CAFile string `koanf:"ca_file"`
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// servers that require one (mutual TLS); both or neither.
	CertFile string `koanf:"cert_file"`
	KeyFile  string `koanf:"key_file"`
	// ServerName overrides the name checked in the server's certificate;
	// empty means the host of the address dialled.
	ServerName string `koanf:"server_name"`
	// InsecureSkipVerify accepts any server certificate. For tests only:
	// anyone on the path can then read and alter the traffic, and the
	// sinks log a warning when it is on.
	InsecureSkipVerify bool `koanf:"insecure_skip_verify"`
}

// Validate reports every inconsistent key, naming it under prefix (the
// block's own key, e.g. "sink.kafka.tls"): keys set while Enabled is false,
// a certificate without its key or a key without its certificate. The
// errors are joined with errors.Join; nil when c is usable. It reads no
// file: Build does.
func (c Config) Validate(prefix string) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", prefix, key, fmt.Sprintf(format, args...)))
	}
	if !c.Enabled {
		// In the order of the struct, so that messages are stable.
		for _, kv := range [...]struct{ key, v string }{
			{"ca_file", c.CAFile}, {"cert_file", c.CertFile}, {"key_file", c.KeyFile}, {"server_name", c.ServerName},
		} {
			if kv.v != "" {
				add(kv.key, "is set but %s.enabled is false", prefix)
			}
		}
		if c.InsecureSkipVerify {
			add("insecure_skip_verify", "is set but %s.enabled is false", prefix)
		}
		return errors.Join(errs...)
	}
	switch {
	case c.CertFile != "" && c.KeyFile == "":
		add("key_file", "must be set together with %s.cert_file", prefix)
	case c.CertFile == "" && c.KeyFile != "":
		add("cert_file", "must be set together with %s.key_file", prefix)
	}
	return errors.Join(errs...)
}

// Build reads the files and returns the client configuration: TLS 1.2 at
// least, the CAs of CAFile (the system roots when it is empty), the client
// certificate when one is set. It returns nil and no error when TLS is off.
// Its errors start with the key inside the block ("ca_file: ..."), so the
// caller puts its section in front: fmt.Errorf("sink.kafka.tls.%w", err).
func (c Config) Build() (*tls.Config, error) {
	if !c.Enabled {
		return nil, nil
	}
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // opt-in for tests; the sinks warn about it
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file: no PEM certificate in %s", c.CAFile)
		}
		tc.RootCAs = pool
	}
	if c.CertFile != "" || c.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cert_file/key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
