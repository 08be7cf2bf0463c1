package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/kafka"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

var (
	testWindowStart = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	testWindowEnd   = testWindowStart.Add(time.Hour)
	testFetchedAt   = time.Date(2026, 11, 22, 10, 0, 0, 123_000_000, time.UTC)
)

// makeBatch builds page `page` of a stream: n records numbered from first,
// each with a payload of pad bytes, ids computed as C7 says.
func makeBatch(t testing.TB, source, account string, page, first, n, pad int) *record.Batch {
	t.Helper()
	var bld record.Builder
	b := &record.Batch{Source: source, Account: account, WindowStart: testWindowStart, WindowEnd: testWindowEnd, Page: page}
	for i := first; i < first+n; i++ {
		raw := fmt.Appendf(nil, `{"createdTime":"2026-11-20T00:%02d:%02d.%03dZ","seq":%d,"account":%q,"ip":"10.0.%d.%d","pad":"%s"}`,
			i/60%60, i%60, i%1000, i, account, i/256%256, i%256, strings.Repeat("x", pad))
		e, flaw := bld.Build(source, account, "createdTime", testWindowStart, testWindowEnd, testFetchedAt, raw)
		if flaw != 0 {
			t.Fatal(flaw)
		}
		b.Envelopes = append(b.Envelopes, e)
	}
	return b
}

// bigEnvelope is record seq of a stream with n bytes of random (hardly
// compressible) base64 payload.
func bigEnvelope(t testing.TB, source, account string, seq, n int) record.Envelope {
	t.Helper()
	rnd := make([]byte, n*3/4)
	if _, err := rand.Read(rnd); err != nil {
		t.Fatal(err)
	}
	raw := fmt.Appendf(nil, `{"createdTime":"2026-11-20T00:00:%02d.000Z","seq":%d,"blob":%q}`, seq%60, seq, base64.StdEncoding.EncodeToString(rnd))
	var bld record.Builder
	e, flaw := bld.Build(source, account, "createdTime", testWindowStart, testWindowEnd, testFetchedAt, raw)
	if flaw != 0 {
		t.Fatal(flaw)
	}
	return e
}

// testConfig is the default configuration pointed at c, with timeouts short
// enough for tests.
func testConfig(c *kfake.Cluster) kafka.Config {
	cfg := kafka.DefaultConfig()
	cfg.Brokers = c.ListenAddrs()
	return cfg
}

// startSink builds and starts a sink; it is shut down when the test ends.
func startSink(t testing.TB, cfg kafka.Config, streams []record.Stream, reg prometheus.Registerer) (*kafka.Sink, string) {
	t.Helper()
	dir := t.TempDir()
	var log *slog.Logger
	if os.Getenv("KAFKA_TEST_DEBUG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := kafka.New(cfg, streams, dir, reg, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s, dir
}

func write(t testing.TB, s *kafka.Sink, b *record.Batch) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.Write(ctx, b); err != nil {
		t.Fatalf("Write %s/%s page %d: %v", b.Source, b.Account, b.Page, err)
	}
}

// byKey indexes records by key; it fails on a key seen twice when unique.
func byKey(t testing.TB, recs []*kgo.Record, unique bool) map[string]*kgo.Record {
	t.Helper()
	m := make(map[string]*kgo.Record, len(recs))
	for _, r := range recs {
		if _, dup := m[string(r.Key)]; dup && unique {
			t.Errorf("key %s read twice", r.Key)
		}
		m[string(r.Key)] = r
	}
	return m
}

// gather flattens a registry to "name{l1="v1",...}" -> value for counters,
// gauges and histogram counts (as name_count).
func gather(t testing.TB, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := func(name string) string {
				var parts []string
				for _, lp := range m.GetLabel() {
					parts = append(parts, lp.GetName()+`="`+lp.GetValue()+`"`)
				}
				return name + "{" + strings.Join(parts, ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key(mf.GetName())] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key(mf.GetName())] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key(mf.GetName()+"_count")] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// header is kafkatest.Header that fails the test when the header is absent.
func header(t testing.TB, r *kgo.Record, key string) string {
	t.Helper()
	v, ok := kafkatest.Header(r, key)
	if !ok {
		t.Fatalf("record %s has no header %q", r.Key, key)
	}
	return v
}
