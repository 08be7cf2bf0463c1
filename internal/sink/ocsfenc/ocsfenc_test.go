package ocsfenc_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/ocsf"
	"github.com/svcexport/collector/internal/ocsf/ocsftest"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
)

func dnsEnvelope(t *testing.T, raw string) record.Envelope {
	t.Helper()
	ws := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var b record.Builder
	e, flaw := b.Build("dns", "acme", "createdTime", ws, ws.Add(time.Hour), ws.Add(2*time.Hour), []byte(raw))
	if flaw != 0 {
		t.Fatal(flaw)
	}
	return e
}

// A value that no longer fits its attribute's type (C3: known fields may
// change type) goes to unmapped and counts once per value under its
// source; two encoders on one registry share the counter.
func TestFallbacksAreCountedPerSourceAndShared(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := ocsfenc.New(ocsfenc.DefaultConfig(), reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ocsfenc.New(ocsfenc.Config{RawData: true}, reg)
	if err != nil {
		t.Fatalf("second encoder on the same registry: %v", err)
	}
	good := dnsEnvelope(t, `{"createdTime":"2026-11-20T00:10:00Z","mid":7,"fqdn":"a.example","ttl":60}`)
	bad := dnsEnvelope(t, `{"createdTime":"2026-11-20T00:10:00Z","mid":{"x":1},"fqdn":"a.example","hostIpAddr":"10.0.0.1","ttl":"sixty"}`)
	s := ocsftest.Load(t)
	for _, enc := range []*ocsfenc.Encoder{a, b} {
		for _, e := range []*record.Envelope{&good, &bad} {
			out, err := enc.Append([]byte("prefix "), e)
			if err != nil {
				t.Fatal(err)
			}
			ev, ok := strings.CutPrefix(string(out), "prefix ")
			if !ok {
				t.Fatalf("Append did not append: %s", out)
			}
			if errs := s.Validate([]byte(ev)); len(errs) > 0 {
				t.Errorf("invalid event %v: %s", errs, ev)
			}
		}
	}
	if got := fallbacks(t, reg, "dns"); got != 4 {
		t.Errorf("%s{source=dns} = %v, want 2 values x 2 encoders", ocsfenc.FallbacksTotal, got)
	}
	out, _ := b.Append(nil, &good)
	var ev struct {
		RawData string `json:"raw_data"`
	}
	if err := json.Unmarshal(out, &ev); err != nil || ev.RawData != string(good.Record) {
		t.Errorf("raw_data %q (%v), want the record", ev.RawData, err)
	}
}

// fallbacks reads collector_ocsf_fallbacks_total{source} from reg.
func fallbacks(t *testing.T, reg *prometheus.Registry, source string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != ocsfenc.FallbacksTotal {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == source {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestAnEnvelopeOfAnUnknownSourceIsAnError(t *testing.T) {
	enc, err := ocsfenc.New(ocsfenc.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := dnsEnvelope(t, `{"createdTime":"2026-11-20T00:10:00Z"}`)
	e.Source = "nope"
	if out, err := enc.Append([]byte("x"), &e); !errors.Is(err, ocsf.ErrUnknownSource) || string(out) != "x" {
		t.Fatalf("Append = %q, %v; want dst unchanged and ErrUnknownSource", out, err)
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	if err := ocsfenc.DefaultConfig().Validate("sink.file.ocsf"); err != nil {
		t.Fatal(err)
	}
	c := ocsfenc.DefaultConfig()
	c.VendorName = "bad \xff"
	if err := c.Validate("sink.file.ocsf"); err == nil || !strings.Contains(err.Error(), "sink.file.ocsf.vendor_name: ") {
		t.Fatalf("Validate = %v", err)
	}
}
