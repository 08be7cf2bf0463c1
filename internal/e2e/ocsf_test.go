package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/ocsf/ocsftest"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/kafka/kafkarecord"
	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/harness/kafkaharness"
)

// problems collects what is wrong with the events of a read, showing the
// first few and counting the rest.
type problems struct {
	mu    sync.Mutex
	n     int
	shown []string
}

func (p *problems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if len(p.shown) < 10 {
		p.shown = append(p.shown, fmt.Sprintf(format, args...))
	}
}

func (p *problems) report(t *testing.T, events int) {
	t.Helper()
	if p.n > 0 {
		t.Errorf("%d problems in %d events, the first:\n%s", p.n, events, strings.Join(p.shown, "\n"))
	}
}

// Nine sources x two accounts, a day backfilled with --once into the file
// sink with format ocsf (and raw_data): every line is an OCSF 1.3.0 event
// valid per the vendored schema, its metadata.uid the C7 id of the record
// it carries under raw_data, and the set of metadata.uid per (source,
// account, day) is the set of ids /_truth gives (C7, C8): complete, and
// nothing twice.
func TestOCSFFileSinkBackfillMatchesTruth(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Dir: dir,
		Sink: fmt.Sprintf("sink:\n  type: file\n  file:\n    dir: %s\n    format: ocsf\n    ocsf:\n      raw_data: true\n", out)})
	c.RunOnce(t, 5*time.Minute)

	schema := ocsftest.Load(t)
	var bad problems
	events := 0
	got := harness.ReadOCSFFileSink(t, out, func(k record.Stream, ev *harness.OCSFEvent, line []byte) {
		events++
		if errs := schema.Validate(line); len(errs) > 0 {
			bad.add("%s/%s %s: %v", k.Source, k.Account, ev.Metadata.UID, errs)
		}
		if ev.RawData == nil {
			bad.add("%s %s: no raw_data", k.Source, ev.Metadata.UID)
			return
		}
		if id, err := record.ID(k.Source, []byte(*ev.RawData)); err != nil || id != ev.Metadata.UID {
			bad.add("%s: metadata.uid %s is not the C7 id of raw_data (%s, %v)", k.Source, ev.Metadata.UID, id, err)
		}
	})
	bad.report(t, events)
	n := c.Compare(t, got, harness.AllStreams())
	if n < 20_000 {
		t.Fatalf("only %d records compared; the test data is too thin to mean much", n)
	}
	if d := got.Duplicates(); d != 0 {
		t.Errorf("%d duplicates in a clean run", d)
	}
	t.Logf("%d OCSF events match truth", n)
}

// Four sources (core and edge) x two accounts, twelve hours into the
// standalone broker with format ocsf, read back with kcat: every value is
// a valid OCSF 1.3.0 event, the key is its metadata.uid, the headers are
// the documented ones with the OCSF content-type and agree with the event
// (source = metadata.log_name, time = the event's time), and the keys per
// (source, account, day) match /_truth.
func TestOCSFKafkaBackfillReadByKcatMatchesTruth(t *testing.T) {
	t.Parallel()
	kafkaharness.KcatBin(t)
	sim := harness.StartSim(t, harness.QuickRates)
	sources := []string{"dns", "cloud_activities", "edge_audit_events", "edge_alerts"}
	broker := kafkaharness.StartBroker(t, 0)
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Minute)
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: sources, Interval: harness.Omit,
		Sink: kafkaharness.SinkYAML(broker.Addr, "create_topics: true", "format: ocsf")})
	c.RunOnce(t, 5*time.Minute)

	schema := ocsftest.Load(t)
	var bad problems
	got := harness.NewOutput()
	events := kafkaharness.Consume(t, broker.Addr, kafkaharness.Topics(sources, "svc."), func(m *kafkaharness.Message) {
		where := fmt.Sprintf("%s/%d@%d", m.Topic, m.Partition, m.Offset)
		h, err := kafkaharness.HeadersWithType(m, kafkarecord.ContentTypeOCSF)
		if err != nil {
			bad.add("%s: %v", where, err)
			return
		}
		ev, err := harness.ParseOCSFEvent(m.Value)
		if err != nil {
			bad.add("%s: %v", where, err)
			return
		}
		tm := time.UnixMilli(ev.Time).UTC()
		switch {
		case string(m.Key) != ev.Metadata.UID && h["id"] != ev.Metadata.UID:
			bad.add("%s: key %s (id header %q), metadata.uid %s", where, m.Key, h["id"], ev.Metadata.UID)
		case h["source"] != ev.Metadata.LogName || m.Topic != svcTopic(h["source"]):
			bad.add("%s: header source %s, metadata.log_name %s", where, h["source"], ev.Metadata.LogName)
		case h["time"] != record.FormatTime(tm):
			bad.add("%s: header time %s, event time %s", where, h["time"], record.FormatTime(tm))
		}
		if errs := schema.Validate(m.Value); len(errs) > 0 {
			bad.add("%s: %v", where, errs)
		}
		got.Add(record.Stream{Source: h["source"], Account: h["account"]}, ev.Metadata.UID, tm)
	})
	bad.report(t, events)
	n := c.Compare(t, got, harness.Streams(sources, harness.Accounts()))
	if n < 5_000 {
		t.Fatalf("only %d records compared; too few to mean much", n)
	}
	if d := got.Duplicates(); d != 0 {
		t.Errorf("%d duplicates in a clean run", d)
	}
	kafkaharness.NoDeadLetters(t, c)
	t.Logf("%d OCSF events in Kafka match truth", n)
}

// BenchmarkOCSFFileSinkEndToEnd runs the collector binary "run --once"
// over the backlog of BenchmarkKafkaSinkEndToEnd (about 600,000 records of
// three dense sources) into the file sink, fsync on, with format envelope
// and with format ocsf (with and without raw_data), and reports rows/s and
// the collector's records per CPU-second. Run it with
//
//	go test -run '^$' -bench OCSFFileSinkEndToEnd -benchtime 1x ./internal/e2e/
func BenchmarkOCSFFileSinkEndToEnd(b *testing.B) {
	file := func(string) string { return "" }
	for _, v := range []kafkaBenchVariant{
		{name: "file-envelope", sink: file},
		{name: "file-ocsf", sink: file, env: []string{"COLLECTOR_SINK__FILE__FORMAT=ocsf"}},
		{name: "file-ocsf-raw_data", sink: file, env: []string{"COLLECTOR_SINK__FILE__FORMAT=ocsf", "COLLECTOR_SINK__FILE__OCSF__RAW_DATA=true"}},
	} {
		b.Run(v.name, func(b *testing.B) {
			var rows int64
			var wall, cpu time.Duration
			for range b.N {
				r := kafkaBenchOnce(b, v)
				rows, wall, cpu = rows+r.rows, wall+r.wall, cpu+r.cpu
			}
			b.ReportMetric(float64(rows)/wall.Seconds(), "rows/s")
			b.ReportMetric(float64(rows)/cpu.Seconds(), "rows/cpu-s")
			b.ReportMetric(cpu.Seconds()/(float64(rows)/1e6), "collector-cpu-s/Mrows")
		})
	}
}

// Mistakes in the new keys (format, the ocsf block, OAUTHBEARER and
// AWS_MSK_IAM) stop the binary with exit 2 and a line naming the key,
// before anything is contacted; no secret is echoed. A token file that
// does not exist is found when the sink is built: the run fails (exit 1)
// naming the key.
func TestOCSFAndSASLConfigMistakesNameTheKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: s\nmetrics:\n  listen: \"\"\ncheckpoint:\n  path: " +
		filepath.Join(dir, "cp.db") + "\n"
	kafkaSink := func(extra string) string {
		return "sink:\n  type: kafka\n  kafka:\n    brokers: [127.0.0.1:1]\n" + extra
	}
	for _, c := range []struct {
		name, yaml string
		code       int
		want       string
	}{
		{"an unknown file format", "sink:\n  file:\n    dir: " + filepath.Join(dir, "out") + "\n    format: xml\n", 2, `sink.file.format: unknown format "xml" (envelope, ocsf)`},
		{"an unknown stdout format", "sink:\n  type: stdout\n  stdout:\n    format: ocsf-1.4\n", 2, `sink.stdout.format: unknown format "ocsf-1.4"`},
		{"an unknown kafka format", kafkaSink("    format: avro\n"), 2, `sink.kafka.format: unknown format "avro" (envelope, record, ocsf)`},
		{"an unknown ocsf key", kafkaSink("    ocsf:\n      raw: true\n"), 2, "sink.kafka.ocsf.raw"},
		{"OAUTHBEARER without a token", kafkaSink("    sasl:\n      mechanism: OAUTHBEARER\n"), 2, "sink.kafka.sasl.oauth.token_url: OAUTHBEARER needs a token"},
		{"a grant without its secret", kafkaSink("    sasl:\n      mechanism: OAUTHBEARER\n      oauth:\n        token_url: https://idp.example/token\n        client_id: c\n"), 2,
			"sink.kafka.sasl.oauth.client_secret: must be set"},
		{"an AWS secret without key id", kafkaSink("    sasl:\n      mechanism: AWS_MSK_IAM\n      aws:\n        secret_access_key: hunter2-aws\n"), 2,
			"sink.kafka.sasl.aws.access_key_id: must be set"},
		{"a token file that does not exist", kafkaSink("    sasl:\n      mechanism: OAUTHBEARER\n      oauth:\n        token_file: " + filepath.Join(dir, "none") + "\n"), 2,
			"sink.kafka.sasl.oauth.token_file: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(p, []byte(base+c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out := harness.RunCLI(t, nil, "run", "--once", "--config", p)
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit %d and %q", code, out, c.code, c.want)
			}
			if strings.Contains(out, "hunter2") || strings.Contains(out, "panic") {
				t.Fatalf("a secret or a panic in the output:\n%s", out)
			}
		})
	}
}
