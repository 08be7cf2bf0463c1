package file

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// openSink starts a sink on cfg and runs Recover with mark, as the
// pipeline does at every start; the caller shuts it down.
func openSink(t *testing.T, cfg Config, mark []byte) *Sink {
	t.Helper()
	s, err := New(cfg, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recover(context.Background(), mark); err != nil {
		t.Fatal(err)
	}
	return s
}

// After a crash the files hold exactly what the checkpoint's mark covers:
// Recover cuts the batches written past it (in the file of the mark and in
// later files) and nothing before it; a stream that had no file when the
// mark was taken loses all its files; without a mark nothing is cut.
func TestRecoverCutsWhatLiesPastTheCheckpointsMark(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gzip"}[gz], func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t.TempDir())
			cfg.Gzip = gz
			cfg.MaxBytes = 3000 // a few batches per file: the cut spans files
			ctx := context.Background()
			k := record.Stream{Source: "dns", Account: "acme"}

			s := openSink(t, cfg, nil)
			var bs []*record.Batch
			for i := range 8 {
				b := batch(t, "dns", "acme", i*10, 10)
				b.Seq = uint64(i)
				bs = append(bs, b)
				mustWrite(t, s, b)
			}
			other := batch(t, "dns", "other", 0, 5)
			mark, err := s.Mark(ctx, map[record.Stream]uint64{k: 5}) // batches 0-4 committed
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, other) // a stream first written after the mark
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(streamFiles(t, cfg.Dir, "dns", "acme")); n < 3 {
				t.Fatalf("%d files: the test wants the cut to span files", n)
			}

			s = openSink(t, cfg, mark)
			if got, want := idsOf(t, cfg.Dir, "dns", "acme"), idsOfBatches(bs[:5]...); !slices.Equal(got, want) {
				t.Errorf("after Recover: %d records, want the %d the mark covers", len(got), len(want))
			}
			if files := streamFiles(t, cfg.Dir, "dns", "other"); len(files) != 0 {
				t.Errorf("a stream written only after the mark keeps %d files", len(files))
			}
			// The run goes on: new batches, a fresh mark, a crash, a
			// restart without a mark cuts nothing.
			for i := 5; i < 8; i++ {
				bs[i].Seq = uint64(i - 5)
				mustWrite(t, s, bs[i])
			}
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			s = openSink(t, cfg, nil)
			if got := idsOf(t, cfg.Dir, "dns", "acme"); !slices.Equal(got, idsOfBatches(bs...)) {
				t.Errorf("without a mark: %d records, want all %d", len(got), len(idsOfBatches(bs...)))
			}
			if s.Delivery() != sink.DeliveryExactlyOnce {
				t.Errorf("delivery %q", s.Delivery())
			}
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// at_least_once keeps what lies past the checkpoint.
func TestAtLeastOnceFilesKeepWhatLiesPastTheCheckpoint(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t.TempDir())
	cfg.Delivery = sink.DeliveryAtLeastOnce
	ctx := context.Background()
	s := openSink(t, cfg, nil)
	b := batch(t, "dns", "acme", 0, 10)
	mustWrite(t, s, b)
	mark, err := s.Mark(ctx, nil)
	if err != nil || mark != nil {
		t.Fatalf("at_least_once mark %q, %v; want none", mark, err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s = openSink(t, cfg, []byte(`{"v":1,"streams":{}}`))
	defer s.Shutdown(ctx)
	if got := idsOf(t, cfg.Dir, "dns", "acme"); len(got) != 10 {
		t.Errorf("%d records kept, want 10", len(got))
	}
	cfg.Delivery = "twice"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "sink.file.delivery") {
		t.Errorf("an unknown delivery: %v", err)
	}
}
