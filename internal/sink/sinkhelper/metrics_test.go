package sinkhelper_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

func TestTwoSinksShareTheFamiliesOfOneRegistry(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	push := func(_ context.Context, b *record.Batch) (sinkhelper.Written, error) {
		return sinkhelper.Written{Records: len(b.Envelopes), Bytes: 100}, nil
	}
	var sinks []*sinkhelper.Base
	for _, name := range []string{"file", "stdout", "file"} {
		b, err := sinkhelper.New(name, reg, push)
		if err != nil {
			t.Fatalf("New %s: %v", name, err)
		}
		if err := b.Start(ctx); err != nil {
			t.Fatal(err)
		}
		sinks = append(sinks, b)
	}
	for i, n := range []int{3, 7, 2} {
		ids := make([]string, n)
		if err := sinks[i].Write(ctx, batch(ids...)); err != nil {
			t.Fatal(err)
		}
	}
	sinks[1].CountBytes(5)
	got := gather(t, reg)
	for k, v := range map[string]float64{
		`collector_sink_records_total{sink="file"}`:                5,
		`collector_sink_records_total{sink="stdout"}`:              7,
		`collector_sink_bytes_total{sink="file"}`:                  200,
		`collector_sink_bytes_total{sink="stdout"}`:                105,
		`collector_sink_write_duration_seconds_count{sink="file"}`: 2,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

func TestAnIncompatibleMetricOfTheSameNameIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: sinkhelper.RecordsTotal, Help: "x"}))
	push := func(context.Context, *record.Batch) (sinkhelper.Written, error) { return sinkhelper.Written{}, nil }
	_, err := sinkhelper.New("file", reg, push)
	if err == nil {
		t.Fatal("New succeeded over a gauge of the same name")
	}
	if _, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		t.Fatalf("error should not be AlreadyRegistered: %v", err)
	}
}

func TestANameAndAPushAreRequired(t *testing.T) {
	push := func(context.Context, *record.Batch) (sinkhelper.Written, error) { return sinkhelper.Written{}, nil }
	if _, err := sinkhelper.New("", nil, push); err == nil {
		t.Error("New accepted an empty name")
	}
	if _, err := sinkhelper.New("file", nil, nil); err == nil {
		t.Error("New accepted a nil push")
	}
}

// Every error kind a sink names and every dead-letter reason exist at 0
// before the first Write, for each sink on the registry: dashboards and
// rate() alerts see them from the start.
func TestKnownErrorKindsAndDeadLetterReasonsStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	push := func(context.Context, *record.Batch) (sinkhelper.Written, error) { return sinkhelper.Written{}, nil }
	if _, err := sinkhelper.New("file", reg, push, sinkhelper.WithErrorKinds("open", "sync")); err != nil {
		t.Fatal(err)
	}
	if _, err := sinkhelper.New("kafka", sinkhelper.Named(reg, "siem"), push, sinkhelper.WithErrorKinds("broker"),
		sinkhelper.WithDeadLetters(t.TempDir(), "topic"), sinkhelper.WithDeadLetterReasons("too_large")); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"collector_sink_errors_total sink=file kind=state": false, "collector_sink_errors_total sink=file kind=canceled": false,
		"collector_sink_errors_total sink=file kind=write": false, "collector_sink_errors_total sink=file kind=open": false,
		"collector_sink_errors_total sink=file kind=sync": false, "collector_sink_errors_total sink=siem kind=broker": false,
		"collector_sink_errors_total sink=siem kind=state": false, "collector_dead_letters_total sink=siem reason=too_large": false,
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key += " sink=" + labels["sink"]
			if k, ok := labels["kind"]; ok {
				key += " kind=" + k
			}
			if r, ok := labels["reason"]; ok {
				key += " reason=" + r
			}
			if _, ok := want[key]; ok {
				want[key] = true
				if v := m.GetCounter().GetValue(); v != 0 {
					t.Errorf("%s = %v, want 0", key, v)
				}
			}
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("%s is missing from a fresh registry", k)
		}
	}
}
