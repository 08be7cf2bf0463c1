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
	push := func(_ context.Context, b *record.Batch) (sinkhelper.Delivered, error) {
		return sinkhelper.Delivered{Records: len(b.Envelopes), Bytes: 100}, nil
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
	push := func(context.Context, *record.Batch) (sinkhelper.Delivered, error) { return sinkhelper.Delivered{}, nil }
	_, err := sinkhelper.New("file", reg, push)
	if err == nil {
		t.Fatal("New succeeded over a gauge of the same name")
	}
	if _, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		t.Fatalf("error should not be AlreadyRegistered: %v", err)
	}
}

func TestANameAndAPushAreRequired(t *testing.T) {
	push := func(context.Context, *record.Batch) (sinkhelper.Delivered, error) { return sinkhelper.Delivered{}, nil }
	if _, err := sinkhelper.New("", nil, push); err == nil {
		t.Error("New accepted an empty name")
	}
	if _, err := sinkhelper.New("file", nil, nil); err == nil {
		t.Error("New accepted a nil push")
	}
}
