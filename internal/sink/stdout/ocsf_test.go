package stdout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/ocsf/ocsftest"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
	"github.com/svcexport/collector/internal/sink/stdout"
)

// With format ocsf every line is the OCSF 1.3.0 event of its record,
// valid per the vendored schema, in batch order; with pretty each event is
// indented and still the same event.
func TestOCSFFormatWritesOneValidEventPerRecord(t *testing.T) {
	envs := ocsftest.Envelopes(t)
	s := ocsftest.Load(t)
	for _, tt := range []struct{ pretty, rawData bool }{{false, false}, {false, true}, {true, false}} {
		t.Run(fmt.Sprintf("pretty=%v/raw_data=%v", tt.pretty, tt.rawData), func(t *testing.T) {
			var buf bytes.Buffer
			cfg := stdout.DefaultConfig()
			cfg.Format, cfg.Pretty, cfg.OCSF.RawData = stdout.FormatOCSF, tt.pretty, tt.rawData
			reg := prometheus.NewRegistry()
			snk, err := stdout.New(cfg, &buf, reg)
			if err != nil {
				t.Fatal(err)
			}
			if err := snk.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer snk.Shutdown(context.Background())
			// One batch per source, as the pipeline hands them over.
			for i := 0; i < len(envs); {
				j := i
				for j < len(envs) && envs[j].Source == envs[i].Source && envs[j].Account == envs[i].Account {
					j++
				}
				b := &record.Batch{Source: envs[i].Source, Account: envs[i].Account, Envelopes: envs[i:j]}
				if err := snk.Write(context.Background(), b); err != nil {
					t.Fatal(err)
				}
				i = j
			}
			dec := json.NewDecoder(&buf)
			n := 0
			for ; dec.More(); n++ {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					t.Fatalf("value %d: %v", n, err)
				}
				if n >= len(envs) {
					t.Fatalf("more events than records")
				}
				var line bytes.Buffer
				if err := json.Compact(&line, raw); err != nil {
					t.Fatal(err)
				}
				if !tt.pretty && !bytes.Equal(line.Bytes(), raw) {
					t.Errorf("event %d is not on one line: %s", n, raw)
				}
				for _, msg := range s.CheckEvent(line.Bytes(), &envs[n], tt.rawData) {
					t.Errorf("event %d (%s): %s\n%s", n, envs[n].Source, msg, line.Bytes())
				}
			}
			if n != len(envs) {
				t.Errorf("%d events for %d records", n, len(envs))
			}
		})
	}
}

// A value that no longer fits its attribute (C3) is counted under its
// source; a batch with a record the mapping can never take is refused for
// good before anything is written, and the stdout output stays clean.
func TestOCSFFallbacksAndUnmappableBatches(t *testing.T) {
	var buf bytes.Buffer
	reg := prometheus.NewRegistry()
	snk, err := stdout.New(stdout.Config{Format: stdout.FormatOCSF}, &buf, reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := snk.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer snk.Shutdown(context.Background())
	b := batch(t, "acme", 0, 3)
	var bld record.Builder
	odd, _ := bld.Build("dns", "acme", "createdTime", winStart, winStart.Add(time.Hour), winStart, []byte(`{"createdTime":"2026-11-22T10:00:00Z","mid":[1],"hostIpAddr":"10.0.0.1","ttl":"x"}`))
	b.Envelopes = append(b.Envelopes, odd)
	if err := snk.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "\n"); got != 4 {
		t.Fatalf("%d lines, want 4", got)
	}
	if got := gatherValue(t, reg, ocsfenc.FallbacksTotal, "source", "dns"); got != 2 {
		t.Errorf("%s{source=dns} = %v, want 2", ocsfenc.FallbacksTotal, got)
	}
	before := buf.Len()
	bad := batch(t, "acme", 10, 2)
	bad.Source = "no_such_source"
	for i := range bad.Envelopes {
		bad.Envelopes[i].Source = "no_such_source"
	}
	if err := snk.Write(context.Background(), bad); err == nil || !sink.IsPermanent(err) {
		t.Fatalf("Write of an unmappable batch = %v, want a permanent error", err)
	}
	if buf.Len() != before {
		t.Errorf("the refused batch wrote %q", buf.String()[before:])
	}
	if got := gatherValue(t, reg, "collector_sink_errors_total", "kind", "invalid"); got != 1 {
		t.Errorf("collector_sink_errors_total{kind=invalid} = %v, want 1", got)
	}
}

func TestConfigValidateNamesTheFormatKey(t *testing.T) {
	for _, c := range []stdout.Config{{}, stdout.DefaultConfig(), {Format: "ocsf"}} {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	if err := (stdout.Config{Format: "xml"}).Validate(); err == nil || !strings.Contains(err.Error(), `sink.stdout.format: unknown format "xml"`) {
		t.Errorf("Validate = %v", err)
	}
	if _, err := stdout.New(stdout.Config{Format: "xml"}, &bytes.Buffer{}, nil); err == nil {
		t.Error("New accepted format xml")
	}
}

// gatherValue is the value of the counter name whose label has value.
func gatherValue(t *testing.T, g prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
