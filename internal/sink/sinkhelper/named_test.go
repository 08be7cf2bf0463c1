package sinkhelper_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// Two sinks of one type (two Kafka sinks, "siem" and "lake") built through
// Named on one registry: the shared families carry the configured names,
// each sink's own family (registered with reg.Register, as the Kafka sink's
// collector_kafka_* are) gets a constant sink label instead of colliding,
// and each has a dead-letter file of its own. A sink named after its type
// keeps the one-sink file name.
func TestNamedSinksOfOneTypeNeverShareASeriesOrADeadLetterFile(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	dir := t.TempDir()
	// The first record of every batch is a dead letter.
	push := func(_ context.Context, b *record.Batch) (sinkhelper.Written, error) {
		dead := []sinkhelper.DeadLetter{{Env: &b.Envelopes[0], Dest: "svc.dns", Reason: "too large", Kind: "too_large"}}
		return sinkhelper.Written{Records: len(b.Envelopes) - 1, DeadLetters: dead}, nil
	}
	for i, name := range []string{"siem", "lake", "kafka"} {
		nreg := sinkhelper.Named(reg, name)
		if got := sinkhelper.NameOf(nreg, "kafka"); got != name {
			t.Fatalf("NameOf = %q, want %q", got, name)
		}
		own := prometheus.NewCounter(prometheus.CounterOpts{Name: "collector_toy_produced_total", Help: "a sink's own family"})
		if err := nreg.Register(own); err != nil {
			t.Fatalf("%s: its own family collides: %v", name, err)
		}
		own.Add(float64(i + 1))
		b, err := sinkhelper.New("kafka", nreg, push, sinkhelper.WithDeadLetters(dir, "topic"))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.Write(ctx, batch(make([]string, i+2)...)); err != nil {
			t.Fatal(err)
		}
		if err := b.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, sinkhelper.DeadLetterFileOf(name, "kafka"))); err != nil {
			t.Errorf("%s: no dead-letter file of its own: %v", name, err)
		}
	}
	got := gather(t, reg)
	for k, v := range map[string]float64{
		`collector_sink_records_total{sink="siem"}`:                     1,
		`collector_sink_records_total{sink="lake"}`:                     2,
		`collector_sink_records_total{sink="kafka"}`:                    3,
		`collector_sink_write_duration_seconds_count{sink="lake"}`:      1,
		`collector_toy_produced_total{sink="siem"}`:                     1,
		`collector_toy_produced_total{sink="lake"}`:                     2,
		`collector_toy_produced_total{sink="kafka"}`:                    3,
		`collector_dead_letters_total{reason="too_large",sink="siem"}`:  1,
		`collector_dead_letters_total{reason="too_large",sink="lake"}`:  1,
		`collector_dead_letters_total{reason="too_large",sink="kafka"}`: 1,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if f := sinkhelper.DeadLetterFileOf("kafka", "kafka"); f != sinkhelper.DeadLetterFile {
		t.Errorf("a sink named after its type writes %s, want %s", f, sinkhelper.DeadLetterFile)
	}
	if a, b := sinkhelper.DeadLetterFileOf("siem", "kafka"), sinkhelper.DeadLetterFileOf("lake", "kafka"); a == b {
		t.Errorf("two sinks share the dead-letter file %s", a)
	}
	if n := sinkhelper.NameOf(reg, "file"); n != "file" {
		t.Errorf("NameOf(a plain registry) = %q, want the default", n)
	}
	if _, err := sinkhelper.New("file", sinkhelper.Named(nil, "x"), push); err != nil {
		t.Errorf("Named(nil) must register nothing and work: %v", err)
	}
}
