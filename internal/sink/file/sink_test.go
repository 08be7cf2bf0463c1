package file

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

func TestEveryLineIsTheEnvelopeAsJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := startSink(t, testConfig(dir))
	b := batch(t, "dns", "acme", 0, 50)
	mustWrite(t, s, b)

	files := streamFiles(t, dir, "dns", "acme")
	if len(files) != 1 {
		t.Fatalf("files = %q, want one", files)
	}
	lines := readLines(t, files[0])
	if len(lines) != len(b.Envelopes) {
		t.Fatalf("%d lines, want %d", len(lines), len(b.Envelopes))
	}
	for i, l := range lines {
		e := &b.Envelopes[i]
		if want := string(e.AppendJSON(nil)); l != want {
			t.Fatalf("line %d:\n got %s\nwant %s", i, l, want)
		}
		var got struct {
			ID, Source, Account, Time string
			WindowStart               string `json:"window_start"`
			Record                    json.RawMessage
		}
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		if got.ID != e.ID || got.Source != "dns" || got.Account != "acme" || got.WindowStart != "2026-11-22T10:00:00.000Z" || !bytes.Equal(got.Record, e.Record) {
			t.Fatalf("line %d decodes to %+v", i, got)
		}
	}
	fi, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("file mode %v, want 0640", fi.Mode().Perm())
	}
	di, err := os.Stat(filepath.Dir(files[0]))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm()&^0o750 != 0 {
		t.Errorf("directory mode %v, want at most 0750", di.Mode().Perm())
	}
}

func TestAPrettyPrintedRecordStaysOnOneLineWithTheSameMeaning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := startSink(t, testConfig(dir))
	raw := []byte("{\r\n  \"createdTime\": \"2026-11-22T10:00:00Z\",\n  \"note\": \"a\\nb\"\n}")
	var bld record.Builder
	e, flaw := bld.Build("dns", "acme", "createdTime", winStart, winEnd, winEnd, raw)
	if flaw != 0 {
		t.Fatal(flaw)
	}
	mustWrite(t, s, &record.Batch{Source: "dns", Account: "acme", Envelopes: []record.Envelope{e}})

	lines := readLines(t, streamFiles(t, dir, "dns", "acme")[0])
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1: %q", len(lines), lines)
	}
	var got struct{ Record any }
	var want any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Record, want) {
		t.Errorf("record = %v, want %v", got.Record, want)
	}
}

func TestFilesRotateBeforeTheyPassMaxBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig(dir)
	one := batch(t, "dns", "acme", 0, 10)
	batchBytes := int64(len(encodePlain(one)))
	cfg.MaxBytes = 3*batchBytes + batchBytes/2 // three batches fit, the fourth does not
	s, reg := startSink(t, cfg)

	var all []*record.Batch
	for i := range 10 {
		b := batch(t, "dns", "acme", i*10, 10)
		all = append(all, b)
		mustWrite(t, s, b)
	}
	files := streamFiles(t, dir, "dns", "acme")
	var lines []int
	for _, f := range files {
		lines = append(lines, len(readLines(t, f)))
		if size := fileSize(t, f); size > cfg.MaxBytes {
			t.Errorf("%s: %d bytes, more than %d", f, size, cfg.MaxBytes)
		}
	}
	if want := []int{30, 30, 30, 10}; !slices.Equal(lines, want) {
		t.Fatalf("lines per file = %v, want %v (whole batches)", lines, want)
	}
	if got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(all...); !slices.Equal(got, want) {
		t.Errorf("ids in file order differ from write order")
	}
	if got := counterValue(t, reg, "collector_sink_files_rotated_total", nil); got != 3 {
		t.Errorf("files rotated = %v, want 3", got)
	}
}

func TestABatchLargerThanMaxBytesGetsAFileOfItsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.MaxBytes = 100
	s, _ := startSink(t, cfg)
	mustWrite(t, s, batch(t, "dns", "acme", 0, 5))
	mustWrite(t, s, batch(t, "dns", "acme", 5, 5))
	if files := streamFiles(t, dir, "dns", "acme"); len(files) != 2 {
		t.Fatalf("files = %q, want 2", files)
	}
	if n := len(idsOf(t, dir, "dns", "acme")); n != 10 {
		t.Fatalf("%d lines, want 10", n)
	}
}

func TestGzipFilesAreOneMemberPerBatchAndNamedPartUntilComplete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.Gzip = true
	reg := prometheus.NewRegistry()
	s, err := New(cfg, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b1, b2 := batch(t, "dns", "acme", 0, 100), batch(t, "dns", "acme", 100, 100)
	mustWrite(t, s, b1)
	mustWrite(t, s, b2)

	files := streamFiles(t, dir, "dns", "acme")
	if len(files) != 1 || !strings.HasSuffix(files[0], ".ndjson.gz.part") {
		t.Fatalf("while writing: files = %q, want one .ndjson.gz.part", files)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	files = streamFiles(t, dir, "dns", "acme")
	if len(files) != 1 || !strings.HasSuffix(files[0], ".ndjson.gz") {
		t.Fatalf("after shutdown: files = %q, want one .ndjson.gz", files)
	}
	if got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(b1, b2); !slices.Equal(got, want) {
		t.Fatalf("ids differ: %d lines, want %d", len(got), len(want))
	}
	// Member by member: each batch is one complete member.
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	// bytes.Reader is an io.ByteReader: gzip reads no further than each
	// member, and Reset goes on with the next one.
	br := bytes.NewReader(data)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range []*record.Batch{b1, b2} {
		if i > 0 {
			if err := zr.Reset(br); err != nil {
				t.Fatalf("member %d: %v", i, err)
			}
		}
		zr.Multistream(false)
		member, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		if !bytes.Equal(member, encodePlain(b)) {
			t.Fatalf("member %d is not batch %d", i, i)
		}
	}
	if err := zr.Reset(br); !errors.Is(err, io.EOF) {
		t.Fatalf("after two members: %v, want EOF", err)
	}
	// The bytes metric counts what is on disk.
	if got := counterValue(t, reg, "collector_sink_bytes_total", nil); got != float64(len(data)) {
		t.Errorf("bytes_total = %v, want %d", got, len(data))
	}
}

func TestEightGoroutinesWritingToSeveralStreamsWriteEveryEnvelopeOnce(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.Gzip = gz
			cfg.MaxBytes = 64 << 10 // many rotations under contention
			s, reg := startSink(t, cfg)
			streams := [][2]string{{"dns", "acme"}, {"dns", "globex"}, {"audit_logs", "org"}}
			const writers, perWriter, size = 8, 24, 40
			var wg sync.WaitGroup
			errs := make(chan error, writers*perWriter)
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						st := streams[(w+i)%len(streams)]
						first := (w*perWriter + i) * size
						if err := s.Write(context.Background(), batch(t, st[0], st[1], first, size)); err != nil {
							errs <- err
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if err := s.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			total := 0
			for _, st := range streams {
				for _, id := range idsOf(t, dir, st[0], st[1]) {
					seen[st[0]+"/"+st[1]+"/"+id]++
					total++
				}
			}
			if want := writers * perWriter * size; total != want || len(seen) != want {
				t.Fatalf("%d lines, %d distinct; want %d each", total, len(seen), want)
			}
			if got := counterValue(t, reg, "collector_sink_records_total", nil); got != float64(total) {
				t.Errorf("records_total = %v, want %d", got, total)
			}
		})
	}
}

func TestAFailedWriteLeavesNothingAndItsRetryWritesTheBatchOnce(t *testing.T) {
	t.Parallel()
	enospc := &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
	tests := []struct {
		name   string
		inject func(fl *faults)
		kind   string
		is     error
	}{
		{"disk full half way through the batch", func(fl *faults) { fl.writeErr = enospc }, "write", syscall.ENOSPC},
		{"fsync fails", func(fl *faults) { fl.syncErr = syscall.EIO }, "sync", syscall.EIO},
	}
	for _, gz := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/gzip=%v", tt.name, gz), func(t *testing.T) {
				dir := t.TempDir()
				cfg := testConfig(dir)
				cfg.Gzip = gz
				s, reg := startSink(t, cfg)
				fl := &faults{}
				s.open = fl.open

				before := batch(t, "dns", "acme", 0, 20)
				mustWrite(t, s, before)
				b := batch(t, "dns", "acme", 20, 20)
				fl.set(tt.inject)
				err := s.Write(context.Background(), b)
				if !errors.Is(err, tt.is) || sink.IsPermanent(err) {
					t.Fatalf("err = %v, want %v, not permanent (the disk may recover)", err, tt.is)
				}
				if !strings.Contains(err.Error(), filepath.Join(dir, "dns", "acme")) {
					t.Errorf("error %q does not name the file", err)
				}
				// Nothing of b is on disk, and what was there is intact.
				if got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(before); !slices.Equal(got, want) {
					t.Fatalf("after the failure: %d lines, want the %d of the first batch", len(got), len(want))
				}
				mustWrite(t, s, b)
				if got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(before, b); !slices.Equal(got, want) {
					t.Fatalf("after the retry: %d lines, want %d, each once", len(got), len(want))
				}
				if got := counterValue(t, reg, "collector_sink_errors_total", map[string]string{"kind": tt.kind}); got != 1 {
					t.Errorf("errors_total{kind=%q} = %v, want 1", tt.kind, got)
				}
			})
		}
	}
}

func TestAStreamWaitsUntilATornTailCanBeCut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, reg := startSink(t, testConfig(dir))
	fl := &faults{}
	s.open = fl.open
	b0, b1, b2 := batch(t, "dns", "acme", 0, 10), batch(t, "dns", "acme", 10, 10), batch(t, "dns", "acme", 20, 10)
	mustWrite(t, s, b0)

	fl.set(func(fl *faults) { fl.writeErr, fl.truncErr = syscall.EIO, syscall.EIO })
	if err := s.Write(context.Background(), b1); !errors.Is(err, syscall.EIO) {
		t.Fatalf("err = %v, want EIO", err)
	}
	// The half batch is still there and cannot be cut: the stream refuses
	// to write anything after it.
	if err := s.Write(context.Background(), b2); err == nil || !strings.Contains(err.Error(), "torn tail") {
		t.Fatalf("err = %v, want the torn tail refusal", err)
	}
	if got := counterValue(t, reg, "collector_sink_errors_total", map[string]string{"kind": "truncate"}); got != 1 {
		t.Errorf("errors_total{kind=truncate} = %v, want 1", got)
	}
	fl.set(func(fl *faults) { fl.truncErr = nil })
	mustWrite(t, s, b1)
	mustWrite(t, s, b2)
	if got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(b0, b1, b2); !slices.Equal(got, want) {
		t.Fatalf("%d lines, want %d, each once", len(got), len(want))
	}
}

func TestAPathTakenByAFileFailsUntilItIsFreed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := startSink(t, testConfig(dir))
	// A regular file where the stream's directory belongs.
	blocker := filepath.Join(dir, "dns")
	if err := os.WriteFile(blocker, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	b := batch(t, "dns", "acme", 0, 10)
	err := s.Write(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), blocker) {
		t.Fatalf("err = %v, want one naming %s", err, blocker)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, b)
	if got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(b); !slices.Equal(got, want) {
		t.Fatalf("%d lines, want %d, each once", len(got), len(want))
	}
}

func TestStartCutsATornPlainTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		garbage string
	}{
		{"half a line", `{"id":"0123","source":"dns","rec`},
		{"zeros where a batch was", strings.Repeat("\x00", 4096)},
		{"zeros then lines a later block kept", strings.Repeat("\x00", 100) + `{"id":"x"}` + "\n" + `{"id":"y"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s1, _ := startSink(t, testConfig(dir))
			b := batch(t, "dns", "acme", 0, 30)
			mustWrite(t, s1, b)
			// A crash: copy the files as they are (the first sink keeps
			// its lock) and add the garbage of an unfinished write.
			crashed := copyTree(t, dir)
			files := streamFiles(t, crashed, "dns", "acme")
			appendFile(t, files[len(files)-1], tt.garbage)

			s2, _ := startSink(t, testConfig(crashed))
			if got, want := idsOf(t, crashed, "dns", "acme"), idsOfBatches(b); !slices.Equal(got, want) {
				t.Fatalf("after repair: %d lines, want %d", len(got), len(want))
			}
			// The next run appends to a new file after the repaired one.
			b2 := batch(t, "dns", "acme", 30, 5)
			mustWrite(t, s2, b2)
			if got, want := idsOf(t, crashed, "dns", "acme"), idsOfBatches(b, b2); !slices.Equal(got, want) {
				t.Fatalf("after a new write: %d lines, want %d", len(got), len(want))
			}
			if n := len(streamFiles(t, crashed, "dns", "acme")); n != 2 {
				t.Errorf("%d files, want 2", n)
			}
		})
	}
}

func TestStartCutsATornGzipMemberAndFinishesTheFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		crash func(t *testing.T, path string, lastMember int64)
		keep  int // batches that survive
	}{
		{"member cut short", func(t *testing.T, path string, last int64) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, last+(fi.Size()-last)/2); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"header only", func(t *testing.T, path string, last int64) {
			if err := os.Truncate(path, last+10); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"member of full length but zeros", func(t *testing.T, path string, last int64) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, _ := f.Stat()
			if _, err := f.WriteAt(make([]byte, fi.Size()-last-memberHeaderLen), last+memberHeaderLen); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"nothing but a torn first member", func(t *testing.T, path string, last int64) {
			if err := os.Truncate(path, 15); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.Gzip = true
			s1, _ := startSink(t, cfg)
			var bs []*record.Batch
			var lastStart int64
			for i := range 3 {
				if i == 2 {
					lastStart = fileSize(t, streamFiles(t, dir, "dns", "acme")[0])
				}
				b := batch(t, "dns", "acme", i*40, 40)
				bs = append(bs, b)
				mustWrite(t, s1, b)
			}
			crashed := copyTree(t, dir)
			part := streamFiles(t, crashed, "dns", "acme")[0]
			tt.crash(t, part, lastStart)

			cfg.Dir = crashed
			startSink(t, cfg)
			files := streamFiles(t, crashed, "dns", "acme")
			if tt.keep == 0 {
				if len(files) != 0 {
					t.Fatalf("files = %q, want the empty one removed", files)
				}
				return
			}
			if len(files) != 1 || !strings.HasSuffix(files[0], ".ndjson.gz") {
				t.Fatalf("files = %q, want one finished .ndjson.gz", files)
			}
			if got, want := idsOf(t, crashed, "dns", "acme"), idsOfBatches(bs[:tt.keep]...); !slices.Equal(got, want) {
				t.Fatalf("after repair: %d lines, want %d", len(got), len(want))
			}
		})
	}
}

func TestNamesSortInWritingOrderAcrossRestartsEvenWhenTheClockGoesBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := time.Date(2026, 11, 22, 15, 30, 0, 0, time.UTC)
	run := func(at time.Time, first int) *record.Batch {
		s, err := New(testConfig(dir), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.now = func() time.Time { return at }
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		b := batch(t, "dns", "acme", first, 5)
		mustWrite(t, s, b)
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b1 := run(clock, 0)
	b2 := run(clock.Add(-time.Hour), 5) // the clock stepped back
	b3 := run(clock, 10)                // same millisecond as the first
	files := streamFiles(t, dir, "dns", "acme")
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := []string{
		"dns-acme-20261122T153000.000Z-000001.ndjson",
		"dns-acme-20261122T153000.000Z-000002.ndjson",
		"dns-acme-20261122T153000.000Z-000003.ndjson",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("names = %q, want %q", names, want)
	}
	if got, want := idsOf(t, dir, "dns", "acme"), idsOfBatches(b1, b2, b3); !slices.Equal(got, want) {
		t.Fatal("ids are not in writing order")
	}
}

func TestAnAccountNameCannotEscapeTheDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	s, _ := startSink(t, testConfig(dir))
	mustWrite(t, s, batch(t, "dns", "../../evil", 0, 3))
	files := streamFiles(t, dir, "dns", "../../evil")
	if len(files) != 1 || !strings.HasPrefix(files[0], dir+string(filepath.Separator)) {
		t.Fatalf("files = %q, want one under %s", files, dir)
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := New(testConfig(dir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := batch(t, "dns", "acme", 0, 1)
	if err := s.Write(ctx, b); !errors.Is(err, sinkhelper.ErrNotStarted) {
		t.Errorf("Write before Start = %v, want sinkhelper.ErrNotStarted", err)
	}
	if err := s.Ready(ctx); !errors.Is(err, sinkhelper.ErrNotStarted) {
		t.Errorf("Ready before Start = %v, want sinkhelper.ErrNotStarted", err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready = %v", err)
	}
	if err := s.Write(ctx, &record.Batch{Source: "dns", Account: "acme"}); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dns")); !os.IsNotExist(err) {
		t.Errorf("an empty batch created files: %v", err)
	}
	if err := s.Write(ctx, &record.Batch{Envelopes: b.Envelopes}); err == nil {
		t.Error("a batch without source and account was accepted")
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Write(canceled, b); !errors.Is(err, context.Canceled) {
		t.Errorf("Write with a canceled ctx = %v", err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if err := s.Write(ctx, b); !errors.Is(err, sinkhelper.ErrClosed) {
		t.Errorf("Write after Shutdown = %v, want sinkhelper.ErrClosed", err)
	}
	if err := s.Ready(ctx); !errors.Is(err, sinkhelper.ErrClosed) {
		t.Errorf("Ready after Shutdown = %v, want sinkhelper.ErrClosed", err)
	}

	never, err := New(testConfig(t.TempDir()), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := never.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown without Start: %v", err)
	}
	if err := never.Start(ctx); !errors.Is(err, sinkhelper.ErrClosed) {
		t.Errorf("Start after Shutdown = %v, want sinkhelper.ErrClosed", err)
	}
}

func TestReadyFailsWhenTheDirectoryIsGone(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	s, _ := startSink(t, testConfig(dir))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Ready = %v, want an error naming %s", err, dir)
	}
}

func TestASecondSinkOnTheSameDirectoryDoesNotStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startSink(t, testConfig(dir))
	other, err := New(testConfig(dir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "another collector") {
		t.Fatalf("Start = %v, want the lock refusal", err)
	}
}

func TestOnlyABatchThatCanNeverBeWrittenIsPermanent(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.Gzip = gz
			s, reg := startSink(t, cfg)
			ctx := context.Background()
			// "dns-" + account + "-" + stamp, number and extension: 44
			// bytes besides the account for gzip's .part name, 41 for
			// plain's (a file is named .part until it is complete).
			longest := 255 - 44
			if !gz {
				longest = 255 - 41
			}
			mustWrite(t, s, batch(t, "dns", strings.Repeat("a", longest-len("dns")), 0, 2))
			for _, tt := range []struct {
				name    string
				b       *record.Batch
				message string
			}{
				{"no source", &record.Batch{Account: "acme", Envelopes: batch(t, "dns", "acme", 0, 1).Envelopes}, "no source or account"},
				{"no account", &record.Batch{Source: "dns", Envelopes: batch(t, "dns", "acme", 0, 1).Envelopes}, "no source or account"},
				{"a file name one byte too long", batch(t, "dns", strings.Repeat("a", longest-len("dns")+1), 0, 1), "longer than the 255"},
				{"an account that escapes to too long a name", batch(t, "dns", strings.Repeat("/", 90), 0, 1), "longer than the 255"},
			} {
				err := s.Write(ctx, tt.b)
				if !sink.IsPermanent(err) || !strings.Contains(err.Error(), tt.message) {
					t.Errorf("%s: err = %v, want a permanent error saying %q", tt.name, err, tt.message)
				}
			}
			if got := counterValue(t, reg, "collector_sink_errors_total", map[string]string{"kind": "invalid"}); got != 4 {
				t.Errorf("errors_total{kind=invalid} = %v, want 4", got)
			}

			// A file system with shorter names than 255 refuses at open.
			s.open = func(path string, _ int, _ os.FileMode) (segment, error) {
				return nil, &os.PathError{Op: "open", Path: path, Err: syscall.ENAMETOOLONG}
			}
			if err := s.Write(ctx, batch(t, "dns", "other", 0, 1)); !sink.IsPermanent(err) || !errors.Is(err, syscall.ENAMETOOLONG) {
				t.Errorf("ENAMETOOLONG: err = %v, want it permanent", err)
			}
		})
	}
}

func TestMetricsOfWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, reg := startSink(t, testConfig(dir))
	b := batch(t, "dns", "acme", 0, 25)
	mustWrite(t, s, b)
	mustWrite(t, s, batch(t, "dns", "acme", 25, 25))
	if err := s.Write(context.Background(), &record.Batch{Source: "dns", Envelopes: b.Envelopes}); err == nil {
		t.Fatal("batch without account accepted")
	}
	if got := counterValue(t, reg, "collector_sink_records_total", nil); got != 50 {
		t.Errorf("records_total = %v", got)
	}
	if got, want := counterValue(t, reg, "collector_sink_bytes_total", nil), float64(fileSize(t, streamFiles(t, dir, "dns", "acme")[0])); got != want {
		t.Errorf("bytes_total = %v, want %v", got, want)
	}
	if got := counterValue(t, reg, "collector_sink_errors_total", map[string]string{"kind": "invalid"}); got != 1 {
		t.Errorf("errors_total{kind=invalid} = %v", got)
	}
	if got := counterValue(t, reg, "collector_sink_write_duration_seconds", nil); got != 3 {
		t.Errorf("write_duration_seconds count = %v, want 3", got)
	}
}

// encodePlain is the NDJSON of b.
func encodePlain(b *record.Batch) []byte {
	var out []byte
	for i := range b.Envelopes {
		out = b.Envelopes[i].AppendNDJSON(out)
	}
	return out
}

// counterValue sums the counters (or histogram counts) of name with the
// sink="file" label and the given other labels.
func counterValue(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			if have["sink"] != "file" {
				continue
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				sum += m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o750)
		}
		if d.Name() == lockName {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o640)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
