// Package tlsconfig is the one TLS client block of the configuration: the
// keys enabled, ca_file, cert_file, key_file, server_name and
// insecure_skip_verify that every sink speaking TLS (sink.kafka.tls,
// sink.clickhouse.tls) takes, their validation and the *tls.Config built
// from them.
//
// It is a bottom-floor package: it imports only the standard library, knows
// nothing of sinks or of the configuration tree, and holds no state. A
// section mounts Config under its own key and passes that key to Validate;
// Build's errors name the key inside the block, for the caller to prefix.
package tlsconfig
