package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// probe reaches the host of rawURL step by step (DNS, TCP, TLS for https)
// within timeout and names the step that failed, so that `collector check`
// says "DNS: no such host" or "TCP: connection refused" within seconds
// instead of a retry loop's "context deadline exceeded" minutes later.
func probe(ctx context.Context, rawURL string, timeout time.Duration) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("URL: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	var addrs []string
	if ip := net.ParseIP(host); ip != nil {
		addrs = []string{ip.String()}
	} else {
		addrs, err = net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return fmt.Errorf("DNS: cannot resolve %s: %s", host, dnsReason(err))
		}
	}
	var d net.Dialer
	var conn net.Conn
	for _, a := range addrs {
		conn, err = d.DialContext(ctx, "tcp", net.JoinHostPort(a, port))
		if err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("TCP: cannot connect to %s: %s", net.JoinHostPort(host, port), netReason(err))
	}
	defer conn.Close()
	if u.Scheme != "https" {
		return nil
	}
	tc := tls.Client(conn, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS: handshake with %s failed: %s", host, netReason(err))
	}
	return nil
}

func dnsReason(err error) string {
	var de *net.DNSError
	if errors.As(err, &de) {
		switch {
		case de.IsNotFound:
			return "no such host"
		case de.IsTimeout:
			return "timed out"
		}
		return de.Err
	}
	return netReason(err)
}

func netReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}
