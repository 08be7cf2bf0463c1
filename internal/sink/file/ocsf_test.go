package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/ocsf/ocsftest"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
)

// ocsfBatches groups the simulator's records of every source
// (ocsftest.Envelopes) into one batch per stream.
func ocsfBatches(t testing.TB) []*record.Batch {
	t.Helper()
	var out []*record.Batch
	idx := map[record.Stream]*record.Batch{}
	for _, e := range ocsftest.Envelopes(t) {
		k := record.Stream{Source: e.Source, Account: e.Account}
		b := idx[k]
		if b == nil {
			b = &record.Batch{Source: e.Source, Account: e.Account, WindowStart: e.WindowStart, WindowEnd: e.WindowEnd}
			idx[k] = b
			out = append(out, b)
		}
		b.Envelopes = append(b.Envelopes, e)
	}
	return out
}

// With format ocsf every line is the OCSF 1.3.0 event of its record, valid
// per the vendored schema, in the order of the batch, in plain and gzip
// files, with raw_data only when asked for; nothing is a fallback.
func TestOCSFFormatWritesOneValidEventPerRecord(t *testing.T) {
	t.Parallel()
	batches := ocsfBatches(t)
	s := ocsftest.Load(t)
	for _, tt := range []struct {
		gzip, rawData bool
	}{{false, false}, {true, false}, {false, true}} {
		t.Run(fmt.Sprintf("gzip=%v/raw_data=%v", tt.gzip, tt.rawData), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.Format, cfg.Gzip, cfg.OCSF.RawData = FormatOCSF, tt.gzip, tt.rawData
			snk, reg := startSink(t, cfg)
			for _, b := range batches {
				mustWrite(t, snk, b)
			}
			if err := snk.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, b := range batches {
				var lines []string
				for _, p := range streamFiles(t, cfg.Dir, b.Source, b.Account) {
					lines = append(lines, readLines(t, p)...)
				}
				if len(lines) != len(b.Envelopes) {
					t.Fatalf("%s/%s: %d lines for %d records", b.Source, b.Account, len(lines), len(b.Envelopes))
				}
				for i, l := range lines {
					for _, msg := range s.CheckEvent([]byte(l), &b.Envelopes[i], tt.rawData) {
						t.Errorf("%s/%s line %d: %s\n%s", b.Source, b.Account, i, msg, l)
					}
					n++
				}
			}
			if n < 20 {
				t.Fatalf("only %d events checked", n)
			}
			if got := counterValue(t, reg, "collector_sink_records_total", nil); got != float64(n) {
				t.Errorf("collector_sink_records_total = %v, want %d", got, n)
			}
			if got := fallbacks(t, reg, ""); got != 0 {
				t.Errorf("collector_ocsf_fallbacks_total = %v for the simulator's records, want 0", got)
			}
		})
	}
}

// A record whose known member changed type (C3) is still written, the
// member under unmapped, and counted in collector_ocsf_fallbacks_total
// under its source.
func TestOCSFFallbacksAreCountedBySource(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t.TempDir())
	cfg.Format = FormatOCSF
	snk, reg := startSink(t, cfg)
	var bld record.Builder
	b := &record.Batch{Source: "dns", Account: "acme", WindowStart: winStart, WindowEnd: winEnd}
	for i, raw := range []string{
		`{"createdTime":"2026-11-22T10:00:01Z","mid":1015,"fqdn":"a.example","hostIpAddr":"10.0.0.1","ttl":60}`,
		`{"createdTime":"2026-11-22T10:00:02Z","mid":{"id":1015},"fqdn":"a.example","hostIpAddr":"10.0.0.1","ttl":{"s":60}}`,
	} {
		e, flaw := bld.Build("dns", "acme", "createdTime", winStart, winEnd, winEnd, []byte(raw))
		if flaw != 0 {
			t.Fatal(i, flaw)
		}
		b.Envelopes = append(b.Envelopes, e)
	}
	mustWrite(t, snk, b)
	if got := fallbacks(t, reg, "dns"); got != 2 {
		t.Errorf("collector_ocsf_fallbacks_total{source=dns} = %v, want 2", got)
	}
	s := ocsftest.Load(t)
	files := streamFiles(t, cfg.Dir, "dns", "acme")
	lines := readLines(t, files[0])
	for i, l := range lines {
		for _, msg := range s.CheckEvent([]byte(l), &b.Envelopes[i], false) {
			t.Errorf("line %d: %s\n%s", i, msg, l)
		}
	}
}

// An envelope that no OCSF class maps (a source the mapping does not know)
// can never be written: the batch fails with a permanent error of kind
// invalid, and nothing of it reaches the file.
func TestOCSFRefusesAnUnmappableBatchForGood(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.Format, cfg.Gzip = FormatOCSF, gz
			snk, reg := startSink(t, cfg)
			b := batch(t, "no_such_source", "acme", 0, 3)
			err := snk.Write(context.Background(), b)
			if err == nil || !sink.IsPermanent(err) {
				t.Fatalf("Write = %v, want a permanent error", err)
			}
			if got := counterValue(t, reg, "collector_sink_errors_total", map[string]string{"kind": "invalid"}); got != 1 {
				t.Errorf("errors_total{kind=invalid} = %v, want 1", got)
			}
			matches, _ := filepath.Glob(filepath.Join(cfg.Dir, "no_such_source", "acme", "*.ndjson*"))
			for _, m := range matches {
				if fi, err := os.Stat(m); err != nil || fi.Size() != 0 {
					t.Errorf("%s holds %d bytes (%v)", m, fi.Size(), err)
				}
			}
			if !errors.Is(err, errUnwritable) {
				t.Errorf("error %v does not say the record cannot be written", err)
			}
		})
	}
}

// fallbacks reads collector_ocsf_fallbacks_total for source ("": the sum
// over every source).
func fallbacks(t testing.TB, g prometheus.Gatherer, source string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != ocsfenc.FallbacksTotal {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && (source == "" || l.GetValue() == source) {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
