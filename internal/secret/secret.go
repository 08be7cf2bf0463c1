// Package secret holds credentials so that they cannot leak by accident:
// a Secret prints, logs and marshals as "[redacted]", and only Reveal gives
// the value, at the one place that sends it. A server may still echo a
// credential it was sent; the process's one Scrubber, which knows every
// credential in the forms requests carry it in, removes them from the
// errors and log lines that hold a server's words.
package secret

import (
	"fmt"
	"log/slog"
	"strings"
)

// Redacted is what a Secret shows instead of its value.
const Redacted = "[redacted]"

// Secret is a credential. The zero value is the empty (unset) secret.
type Secret struct {
	value string
}

// New wraps value.
func New(value string) Secret { return Secret{value: value} }

// FromFile reads a secret from path (a regular file of at most
// MaxFileBytes, ReadFile), trimming one trailing newline (files
// written by editors and Kubernetes mounts end with one). The error names the
// file, never its content.
func FromFile(path string) (Secret, error) {
	b, err := ReadFile(path, MaxFileBytes)
	if err != nil {
		return Secret{}, fmt.Errorf("read secret file: %w", err)
	}
	return Secret{value: strings.TrimRight(string(b), "\r\n")}, nil
}

// Resolve returns the secret given inline, or else the content of file when
// file is set; an inline value wins. Neither set gives the empty secret.
func Resolve(inline, file string) (Secret, error) {
	if inline != "" {
		return New(inline), nil
	}
	if file != "" {
		return FromFile(file)
	}
	return Secret{}, nil
}

// Reveal returns the value. Call it only where the secret is sent.
func (s Secret) Reveal() string { return s.value }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s.value != "" }

// String implements fmt.Stringer with the redacted form.
func (s Secret) String() string {
	if s.value == "" {
		return ""
	}
	return Redacted
}

// GoString implements fmt.GoStringer, so %#v does not reveal it either.
func (s Secret) GoString() string { return `secret.Secret("` + s.String() + `")` }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// UnmarshalText implements encoding.TextUnmarshaler, so a configuration
// loader can fill a Secret from YAML or the environment.
func (s *Secret) UnmarshalText(b []byte) error {
	s.value = string(b)
	return nil
}

// MarshalText implements encoding.TextMarshaler with the redacted form, so
// JSON and YAML dumps of a configuration never hold the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
