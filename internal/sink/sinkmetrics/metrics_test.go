package sinkmetrics_test

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/sink/sinkmetrics"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTwoSinksShareTheFamiliesOfOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := sinkmetrics.New(reg, "file")
	if err != nil {
		t.Fatal(err)
	}
	b, err := sinkmetrics.New(reg, "stdout")
	if err != nil {
		t.Fatal(err)
	}
	again, err := sinkmetrics.New(reg, "file")
	if err != nil {
		t.Fatalf("second New for the same sink: %v", err)
	}
	a.Records.Add(3)
	again.Records.Add(2)
	b.Records.Add(7)
	a.Bytes.Add(100)
	a.WriteDuration.Observe(0.002)
	a.Error("write")
	a.Error("write")
	b.Error("sync")

	got := gather(t, reg)
	want := map[string]float64{
		`collector_sink_records_total{sink="file"}`:                5,
		`collector_sink_records_total{sink="stdout"}`:              7,
		`collector_sink_bytes_total{sink="file"}`:                  100,
		`collector_sink_errors_total{kind="write",sink="file"}`:    2,
		`collector_sink_errors_total{kind="sync",sink="stdout"}`:   1,
		`collector_sink_write_duration_seconds_count{sink="file"}`: 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

func TestNilRegistererGivesWorkingMetrics(t *testing.T) {
	m, err := sinkmetrics.New(nil, "file")
	if err != nil {
		t.Fatal(err)
	}
	m.Records.Inc()
	m.Error("write")
}

func TestAnIncompatibleMetricOfTheSameNameIsAnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: sinkmetrics.RecordsTotal, Help: "x"}))
	_, err := sinkmetrics.New(reg, "file")
	if err == nil {
		t.Fatal("New succeeded over a gauge of the same name")
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		t.Fatalf("error should not be AlreadyRegistered: %v", err)
	}
}

func TestEmptySinkNameIsRejected(t *testing.T) {
	if _, err := sinkmetrics.New(prometheus.NewRegistry(), ""); err == nil {
		t.Fatal("New accepted an empty sink name")
	}
}

// gather flattens counters and histogram counts to "name{labels}" -> value.
func gather(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := func(name string) string {
				s := name + "{"
				for i, lp := range m.GetLabel() {
					if i > 0 {
						s += ","
					}
					s += lp.GetName() + `="` + lp.GetValue() + `"`
				}
				return s + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key(mf.GetName())] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key(mf.GetName()+"_count")] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
