// Package kafkatest holds test helpers for code that talks to Kafka: an
// in-process kfake cluster bound to loopback, a reader that drains topics
// with its own franz-go client (independent of any producer under test),
// and a throwaway certificate authority for TLS tests. Tests only; no
// production package may import it.
package kafkatest

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// NewCluster starts an in-process kfake cluster of one broker on a random
// loopback port (opts may change that, e.g. kfake.NumBrokers(3)) and closes
// it when the test ends.
func NewCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("start kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// ReadAll reads every record of topics from the start up to the end offsets
// the cluster reports when ReadAll begins, with a client of its own built
// from addrs and opts (TLS, SASL). Records come sorted by topic, partition
// and offset. It fails the test after 30 s.
func ReadAll(t testing.TB, addrs []string, topics []string, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	base := append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)
	admCl, err := kgo.NewClient(base...)
	if err != nil {
		t.Fatalf("kafkatest: admin client: %v", err)
	}
	defer admCl.Close()
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatalf("kafkatest: list end offsets of %v: %v", topics, err)
	}
	type tp struct {
		topic string
		part  int32
	}
	want := map[tp]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			want[tp{o.Topic, o.Partition}] = o.Offset
		}
	})
	var out []*kgo.Record
	if len(want) == 0 {
		return out
	}
	cons, err := kgo.NewClient(append(base,
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		t.Fatalf("kafkatest: consumer: %v", err)
	}
	defer cons.Close()
	for len(want) > 0 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("kafkatest: read %v: %d partitions not read to their end (%v): %v", topics, len(want), want, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("kafkatest: fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			end, ok := want[k]
			if !ok || r.Offset >= end {
				return
			}
			out = append(out, r)
			if r.Offset+1 >= end {
				delete(want, k)
			}
		})
	}
	slices.SortFunc(out, func(a, b *kgo.Record) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return out
}

// Header returns the value of the first header named key, and whether
// there was one.
func Header(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// CA is a throwaway certificate authority for TLS tests.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate in PEM form.
	PEM []byte
}

// NewCA makes a CA valid for one day.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "kafkatest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// WriteCA writes the CA certificate to dir and returns the file's path.
func (ca *CA) WriteCA(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(p, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue makes a leaf certificate for hosts (DNS names or IP addresses)
// usable by servers and clients, and returns it with its key in PEM.
func (ca *CA) Issue(t testing.TB, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// ServerTLS returns a server TLS configuration with a certificate for
// 127.0.0.1 and localhost signed by ca.
func (ca *CA) ServerTLS(t testing.TB) *tls.Config {
	t.Helper()
	certPEM, keyPEM := ca.Issue(t, "127.0.0.1", "localhost")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
