package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/kafkatest"
)

// TestStandaloneSizeAgreesWithFranzGo sweeps record sizes across a batch
// limit and compares the sink's arithmetic with franz-go's own verdict:
// every record the sink lets through must be accepted, and every record
// franz-go refuses must be one the sink would dead-letter after the
// refusal (size + slack over the limit), so none is retried forever.
func TestStandaloneSizeAgreesWithFranzGo(t *testing.T) {
	const limit = 4096
	c := kafkatest.NewCluster(t, kfake.SeedTopics(1, "sizes"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerBatchMaxBytes(limit),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	enc := encoder{format: FormatEnvelope, contentType: []byte(ContentType)}
	ws := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var refused, passed int
	for pad := 3400; pad < 3700; pad++ {
		raw := []byte(`{"createdTime":"2026-11-20T00:00:00Z","pad":"` + strings.Repeat("p", pad) + `"}`)
		var b record.Builder
		e, flaw := b.Build("dns", "acme", "createdTime", ws, ws.Add(time.Hour), ws, raw)
		if flaw != 0 {
			t.Fatal(flaw)
		}
		r := &enc.encode([]record.Envelope{e}, []string{"sizes"})[0]
		size := standaloneSize(r)
		err = cl.ProduceSync(ctx, r).FirstErr()
		switch {
		case err == nil:
			passed++
		case errors.Is(err, kerr.MessageTooLarge):
			refused++
			if size <= limit {
				t.Errorf("standaloneSize %d <= %d but franz-go refused the record: the sink would produce it and fail", size, limit)
			}
			if size+tooLargeSlack <= limit {
				t.Errorf("franz-go refused a record of standaloneSize %d: the sink would retry it forever", size)
			}
		default:
			t.Fatalf("produce: %v", err)
		}
		if err == nil && size > limit+8 {
			t.Errorf("standaloneSize %d is far over %d but franz-go took it: the sink would dead-letter records that fit", size, limit)
		}
	}
	if refused == 0 || passed == 0 {
		t.Fatalf("sweep did not cross the limit: %d passed, %d refused", passed, refused)
	}
}

func TestTopicNames(t *testing.T) {
	for _, tt := range []struct {
		tmpl, source, account, want string
	}{
		{"svc.{source}", "dns", "acme", "svc.dns"},
		{"svc.{source}.{account}", "dns", "Beta Corp/ü", "svc.dns.Beta_Corp___"},
		{"{account}-{source}", "edge_alerts", "org", "org-edge_alerts"},
		{"fixed", "dns", "acme", "fixed"},
		{"{source}", strings.Repeat("s", 300), "acme", strings.Repeat("s", 249)},
	} {
		tp, err := parseTopicTemplate(tt.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tt.tmpl, err)
		}
		if got := tp.name(tt.source, tt.account); got != tt.want {
			t.Errorf("%s with %s/%s = %q, want %q", tt.tmpl, tt.source, tt.account, got, tt.want)
		}
	}
	for _, bad := range []string{"", "a}b", "{source", "{Source}", "{}", "a b", "x/{source}"} {
		if _, err := parseTopicTemplate(bad); err == nil {
			t.Errorf("template %q accepted", bad)
		}
	}
}

// BenchmarkEncode is the sink's own CPU per record (envelope to Kafka
// record, no I/O, no compression).
func BenchmarkEncode(b *testing.B) {
	ws := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var bld record.Builder
	envs := make([]record.Envelope, 5000)
	topics := make([]string, len(envs))
	for i := range envs {
		raw := []byte(`{"createdTime":"2026-11-20T00:00:00.123Z","query":"login.example.com","queryType":"A","resolvedIps":["10.1.2.3"],"deviceName":"WS-00042","seq":` + strings.Repeat("7", 1+i%9) + `}`)
		e, flaw := bld.Build("dns", "acme", "createdTime", ws, ws.Add(time.Hour), ws, raw)
		if flaw != 0 {
			b.Fatal(flaw)
		}
		envs[i], topics[i] = e, "svc.dns"
	}
	for _, format := range []string{FormatEnvelope, FormatRecord} {
		b.Run(format, func(b *testing.B) {
			enc := encoder{format: format, contentType: []byte(ContentType)}
			b.ReportAllocs()
			for b.Loop() {
				recs := enc.encode(envs, topics)
				if len(recs) != len(envs) {
					b.Fatal("short")
				}
			}
			b.ReportMetric(float64(b.N*len(envs))/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
