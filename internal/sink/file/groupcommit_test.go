package file

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// holdFirstSync makes the first file fsync wait for release.
func holdFirstSync(fl *faults) (release func()) {
	ch := make(chan struct{})
	first := true
	fl.set(func(fl *faults) {
		fl.onSync = func() {
			if first { // syncs of one stream are serialized by its leader
				first = false
				<-ch
			}
		}
	})
	return func() { close(ch) }
}

func TestWritesQueuedBehindAnFsyncShareTheNextOne(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		s, _ := startSink(t, testConfig(dir))
		fl := &faults{}
		s.open = fl.open
		release := holdFirstSync(fl)

		var wg sync.WaitGroup
		var bs []*record.Batch
		write := func(b *record.Batch) {
			bs = append(bs, b)
			wg.Go(func() { mustWrite(t, s, b) })
		}
		write(batch(t, "dns", "acme", 0, 10))
		synctest.Wait() // the first Write leads and waits in its fsync
		for i := 1; i < 8; i++ {
			write(batch(t, "dns", "acme", i*10, 10))
		}
		synctest.Wait() // seven Writes queued behind it
		release()
		wg.Wait()

		fl.mu.Lock()
		syncs := fl.syncs
		fl.mu.Unlock()
		if syncs != 2 {
			t.Errorf("%d fsyncs for 8 writes, want 2 (one, then one for the seven queued)", syncs)
		}
		got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(bs...)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%d lines, want %d, each once", len(got), len(want))
		}
	})
}

func TestAWriteWhoseCtxEndsWhileQueuedIsNotWritten(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		s, reg := startSink(t, testConfig(dir))
		fl := &faults{}
		s.open = fl.open
		release := holdFirstSync(fl)

		b0, b1 := batch(t, "dns", "acme", 0, 10), batch(t, "dns", "acme", 10, 10)
		var wg sync.WaitGroup
		wg.Go(func() { mustWrite(t, s, b0) })
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := s.Write(ctx, b1); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("queued Write = %v, want DeadlineExceeded", err)
		}
		release()
		wg.Wait()
		if got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(b0); !slices.Equal(got, want) {
			t.Fatalf("%d lines, want only the %d of the first batch", len(got), len(want))
		}
		if got := counterValue(t, reg, "collector_sink_errors_total", map[string]string{"kind": "canceled"}); got != 1 {
			t.Errorf("errors_total{kind=canceled} = %v, want 1", got)
		}
	})
}

func TestShutdownWaitsForWritesOrLeavesTheCloseToTheLast(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cfg := testConfig(dir)
		cfg.Gzip = true
		s, err := New(cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		fl := &faults{}
		s.open = fl.open
		release := holdFirstSync(fl)

		var wg sync.WaitGroup
		wg.Go(func() { mustWrite(t, s, batch(t, "dns", "acme", 0, 10)) })
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown with a Write stuck in fsync = %v, want DeadlineExceeded", err)
		}
		if err := s.Write(context.Background(), batch(t, "dns", "acme", 10, 1)); !errors.Is(err, sinkhelper.ErrClosed) {
			t.Errorf("Write during Shutdown = %v, want sinkhelper.ErrClosed", err)
		}
		release()
		wg.Wait()
		// The last Write closed the file: the .part is now final.
		files := streamFiles(t, dir, "dns", "acme")
		if len(files) != 1 || !strings.HasSuffix(files[0], ".ndjson.gz") {
			t.Fatalf("files = %q, want one finished .ndjson.gz", files)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown again: %v", err)
		}
	})
}

func TestAQuietStreamsGzipFileIsFinishedAfterMaxAge(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cfg := testConfig(dir)
		cfg.Gzip = true
		cfg.MaxAge = 10 * time.Minute
		s, reg := startSink(t, cfg)
		b1 := batch(t, "dns", "acme", 0, 10)
		mustWrite(t, s, b1)
		if files := streamFiles(t, dir, "dns", "acme"); len(files) != 1 || !strings.HasSuffix(files[0], ".part") {
			t.Fatalf("files = %q, want one .part", files)
		}
		time.Sleep(9 * time.Minute)
		synctest.Wait()
		if files := streamFiles(t, dir, "dns", "acme"); !strings.HasSuffix(files[0], ".part") {
			t.Fatalf("closed before MaxAge: %q", files)
		}
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		files := streamFiles(t, dir, "dns", "acme")
		if len(files) != 1 || !strings.HasSuffix(files[0], ".ndjson.gz") {
			t.Fatalf("files = %q, want one finished .ndjson.gz", files)
		}
		if got := counterValue(t, reg, "collector_sink_files_rotated_total", nil); got != 1 {
			t.Errorf("files rotated = %v, want 1", got)
		}
		b2 := batch(t, "dns", "acme", 10, 10)
		mustWrite(t, s, b2)
		if files := streamFiles(t, dir, "dns", "acme"); len(files) != 2 {
			t.Fatalf("files = %q, want a new one", files)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(b1, b2); !slices.Equal(got, want) {
			t.Fatalf("%d lines, want %d", len(got), len(want))
		}
	})
}
