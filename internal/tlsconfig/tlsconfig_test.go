package tlsconfig_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/tlsconfig"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTheZeroValueIsTLSOff(t *testing.T) {
	var c tlsconfig.Config
	if err := c.Validate("sink.x.tls"); err != nil {
		t.Fatal(err)
	}
	if tc, err := c.Build(); tc != nil || err != nil {
		t.Fatalf("Build of TLS off = %v, %v", tc, err)
	}
}

func TestValidateNamesEveryInconsistentKey(t *testing.T) {
	cases := []struct {
		name string
		cfg  tlsconfig.Config
		want []string
	}{
		{"keys set with TLS off", tlsconfig.Config{CAFile: "ca.pem", ServerName: "x", InsecureSkipVerify: true}, []string{
			"sink.kafka.tls.ca_file: is set but sink.kafka.tls.enabled is false",
			"sink.kafka.tls.server_name: is set but sink.kafka.tls.enabled is false",
			"sink.kafka.tls.insecure_skip_verify: is set but sink.kafka.tls.enabled is false",
		}},
		{"a certificate without its key", tlsconfig.Config{Enabled: true, CertFile: "c.pem"}, []string{
			"sink.kafka.tls.key_file: must be set together with sink.kafka.tls.cert_file",
		}},
		{"a key without its certificate", tlsconfig.Config{Enabled: true, KeyFile: "k.pem"}, []string{
			"sink.kafka.tls.cert_file: must be set together with sink.kafka.tls.key_file",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate("sink.kafka.tls")
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestBuildReadsTheFilesAndNamesTheKeyOnError(t *testing.T) {
	dir := t.TempDir()
	ca := newCert(t, dir, "ca", nil)
	c, err := tlsconfig.Config{Enabled: true, CAFile: ca.certFile, CertFile: ca.certFile, KeyFile: ca.keyFile, ServerName: "srv.test"}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if c.RootCAs == nil || len(c.Certificates) != 1 || c.ServerName != "srv.test" || c.InsecureSkipVerify || c.MinVersion != tls.VersionTLS12 {
		t.Errorf("tls.Config = %+v", c)
	}
	if c, err := (tlsconfig.Config{Enabled: true}).Build(); err != nil || c.RootCAs != nil {
		t.Errorf("without a CA file the system roots are used (RootCAs nil): %v, %v", c, err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		cfg  tlsconfig.Config
		want string
	}{
		{tlsconfig.Config{Enabled: true, CAFile: filepath.Join(dir, "none.pem")}, "ca_file: open "},
		{tlsconfig.Config{Enabled: true, CAFile: notPEM}, "ca_file: no PEM certificate in " + notPEM},
		{tlsconfig.Config{Enabled: true, CertFile: ca.certFile, KeyFile: notPEM}, "cert_file/key_file:"},
	} {
		if _, err := bad.cfg.Build(); err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("Build(%+v) = %v, want it to start with %q", bad.cfg, err, bad.want)
		}
	}
}

// TestHandshake dials a TLS listener that requires a client certificate:
// the right CA and certificate get through; a wrong CA is refused with
// x509.UnknownAuthorityError, a wrong name with x509.HostnameError, a
// missing client certificate by the server.
func TestHandshake(t *testing.T) {
	dir := t.TempDir()
	ca := newCert(t, dir, "ca", nil)
	srv := newCert(t, dir, "srv.test", ca)
	client := newCert(t, dir, "client", ca)
	addr := listen(t, srv, ca)

	ok := tlsconfig.Config{Enabled: true, CAFile: ca.certFile, CertFile: client.certFile, KeyFile: client.keyFile, ServerName: "srv.test"}
	if err := dial(t, ok, addr); err != nil {
		t.Fatalf("right CA and client certificate: %v", err)
	}

	wrongCA := ok
	wrongCA.CAFile = newCert(t, t.TempDir(), "other-ca", nil).certFile
	var unknown x509.UnknownAuthorityError
	if err := dial(t, wrongCA, addr); !errors.As(err, &unknown) {
		t.Errorf("wrong CA: %v, want x509.UnknownAuthorityError", err)
	}

	wrongName := ok
	wrongName.ServerName = ""
	var host x509.HostnameError
	if err := dial(t, wrongName, addr); !errors.As(err, &host) {
		t.Errorf("certificate for srv.test dialled as 127.0.0.1: %v, want x509.HostnameError", err)
	}

	noClientCert := ok
	noClientCert.CertFile, noClientCert.KeyFile = "", ""
	if err := dial(t, noClientCert, addr); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("no client certificate: %v, want the server's refusal", err)
	}

	insecure := tlsconfig.Config{Enabled: true, CertFile: client.certFile, KeyFile: client.keyFile, InsecureSkipVerify: true}
	if err := dial(t, insecure, addr); err != nil {
		t.Errorf("insecure_skip_verify: %v", err)
	}
}

type certFiles struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certFile string
	keyFile  string
}

// newCert writes a certificate for name signed by parent (self-signed CA
// when parent is nil) and its key as PEM files in dir.
func newCert(t *testing.T, dir, name string, parent *certFiles) *certFiles {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{name}, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA = true
	} else {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := &certFiles{cert: cert, key: key, certFile: filepath.Join(dir, name+".pem"), keyFile: filepath.Join(dir, name+".key")}
	if err := os.WriteFile(f.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// listen serves TLS with srv's certificate on 127.0.0.1, requiring a client
// certificate signed by ca; each connection completes its handshake and is
// closed.
func listen(t *testing.T, srv, ca *certFiles) string {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(srv.certFile, srv.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}

// dial handshakes with addr using the configuration c builds.
func dial(t *testing.T, c tlsconfig.Config, addr string) error {
	t.Helper()
	tc, err := c.Build()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tc)
	if err != nil {
		return err
	}
	// TLS 1.3 reports a refused client certificate only on the first read.
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	_, rerr := conn.Read(make([]byte, 1))
	_ = conn.Close()
	var ne net.Error
	if rerr != nil && !errors.Is(rerr, net.ErrClosed) && !(errors.As(rerr, &ne) && ne.Timeout()) && rerr.Error() != "EOF" {
		return rerr
	}
	return nil
}
