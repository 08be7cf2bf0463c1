package sinkhelper_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
	"github.com/svcexport/collector/internal/sink/sinktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// toy is the smallest sink: its push hands the batch to a sinktest.Recorder
// (which can hold and fail writes) and reports 10 bytes per record, less
// the records whose id begins with "dead", which it dead-letters; its steps
// log their names.
type toy struct {
	*sinkhelper.Base
	rec      sinktest.Recorder
	mu       sync.Mutex
	steps    []string
	startErr error
}

func newToy(t *testing.T, reg prometheus.Registerer, opts ...sinkhelper.Option) *toy {
	t.Helper()
	ty := &toy{}
	step := func(name string) {
		ty.mu.Lock()
		ty.steps = append(ty.steps, name)
		ty.mu.Unlock()
	}
	push := func(ctx context.Context, b *record.Batch) (sinkhelper.Written, error) {
		if err := ty.rec.Write(ctx, b); err != nil {
			return sinkhelper.Written{}, err
		}
		var dead []sinkhelper.DeadLetter
		for i, e := range b.Envelopes {
			if strings.HasPrefix(e.ID, "dead") {
				dead = append(dead, sinkhelper.DeadLetter{Env: &b.Envelopes[i], Dest: "svc.dns", Reason: `too large: "` + e.ID + `"`, Kind: "too_large"})
			}
		}
		n := len(b.Envelopes) - len(dead)
		return sinkhelper.Written{Records: n, Bytes: 10 * int64(n), DeadLetters: dead}, nil
	}
	opts = append([]sinkhelper.Option{
		sinkhelper.WithStart(func(context.Context) error {
			step("start")
			ty.mu.Lock()
			defer ty.mu.Unlock()
			err := ty.startErr
			ty.startErr = nil
			return err
		}),
		sinkhelper.WithReady(func(context.Context) error { step("ready"); return nil }),
		sinkhelper.WithDrain(func(context.Context) error { step("drain"); return nil }),
		sinkhelper.WithClose(func() error { step("close"); return nil }),
	}, opts...)
	b, err := sinkhelper.New("toy", reg, push, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ty.Base = b
	return ty
}

func (ty *toy) stepsNow() []string {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	return slices.Clone(ty.steps)
}

func batch(ids ...string) *record.Batch {
	b := &record.Batch{Source: "dns", Account: "acme", Page: 3}
	for _, id := range ids {
		b.Envelopes = append(b.Envelopes, record.Envelope{ID: id, Source: "dns", Account: "acme", Record: []byte(`{"id":"` + id + `"}`)})
	}
	return b
}

func TestLifecycleRefusesWritesOutsideStartAndShutdown(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	ty := newToy(t, reg)
	if err := ty.Write(ctx, batch("a")); !errors.Is(err, sinkhelper.ErrNotStarted) || !strings.HasPrefix(err.Error(), "toy sink: ") {
		t.Errorf("Write before Start = %v, want ErrNotStarted named after the sink", err)
	}
	if err := ty.Ready(ctx); !errors.Is(err, sinkhelper.ErrNotStarted) {
		t.Errorf("Ready before Start = %v", err)
	}
	if err := ty.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ty.Start(ctx); !errors.Is(err, sinkhelper.ErrStarted) {
		t.Errorf("second Start = %v, want ErrStarted", err)
	}
	if err := ty.Ready(ctx); err != nil {
		t.Errorf("Ready = %v", err)
	}
	if err := ty.Write(ctx, batch()); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	if err := ty.Write(ctx, batch("a", "b")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := ty.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	if err := ty.Write(ctx, batch("c")); !errors.Is(err, sinkhelper.ErrClosed) {
		t.Errorf("Write after Shutdown = %v, want ErrClosed", err)
	}
	if err := ty.Ready(ctx); !errors.Is(err, sinkhelper.ErrClosed) {
		t.Errorf("Ready after Shutdown = %v", err)
	}
	if err := ty.Start(ctx); !errors.Is(err, sinkhelper.ErrClosed) {
		t.Errorf("Start after Shutdown = %v", err)
	}
	if got, want := ty.stepsNow(), []string{"start", "ready", "drain", "close"}; !slices.Equal(got, want) {
		t.Errorf("steps %q, want %q (each once)", got, want)
	}
	if s := ty.rec.Stats(); s.Writes != 1 || s.Records != 2 {
		t.Errorf("pushed %+v, want one batch of 2 (the empty one is not pushed)", s)
	}
	got := gather(t, reg)
	for k, v := range map[string]float64{
		`collector_sink_records_total{sink="toy"}`:                  2,
		`collector_sink_bytes_total{sink="toy"}`:                    20,
		`collector_sink_write_duration_seconds_count{sink="toy"}`:   4,
		`collector_sink_errors_total{kind="state",sink="toy"}`:      2,
		`collector_sink_errors_total{kind="canceled",sink="toy"}`:   0,
		`collector_sink_errors_total{kind="write",sink="toy"}`:      0,
		`collector_sink_write_duration_seconds_count{sink="other"}`: 0,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestShutdownWithoutStartRunsNoStep(t *testing.T) {
	ctx := context.Background()
	ty := newToy(t, nil)
	for range 2 {
		if err := ty.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown without Start: %v", err)
		}
	}
	if err := ty.Start(ctx); !errors.Is(err, sinkhelper.ErrClosed) {
		t.Errorf("Start after Shutdown = %v", err)
	}
	if got := ty.stepsNow(); len(got) != 0 {
		t.Errorf("steps %q, want none", got)
	}
}

func TestAFailedStartCanBeTriedAgain(t *testing.T) {
	ctx := context.Background()
	ty := newToy(t, nil)
	boom := errors.New("broker unreachable")
	ty.startErr = boom
	if err := ty.Start(ctx); !errors.Is(err, boom) {
		t.Fatalf("Start = %v, want the start step's error", err)
	}
	if err := ty.Write(ctx, batch("a")); !errors.Is(err, sinkhelper.ErrNotStarted) {
		t.Errorf("Write after a failed Start = %v", err)
	}
	if err := ty.Start(ctx); err != nil {
		t.Fatalf("second Start: %v", err)
	}
	if err := ty.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestErrorsAreCountedByTheirKindAndKeepTheirClass(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	ty := newToy(t, reg)
	if err := ty.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer ty.Shutdown(ctx)

	forGood := sink.Permanent(sinkhelper.Kind("invalid", errors.New("no source")))
	ty.rec.FailNext(1, forGood)
	err := ty.Write(ctx, batch("a"))
	if !sink.IsPermanent(err) || sinkhelper.KindOf(err) != "invalid" {
		t.Errorf("err = %v: permanent %v, kind %q", err, sink.IsPermanent(err), sinkhelper.KindOf(err))
	}
	ty.rec.FailNext(1, errors.New("disk full")) // unmarked: kind write, transient
	if err := ty.Write(ctx, batch("a")); err == nil || sink.IsPermanent(err) {
		t.Errorf("err = %v, want a transient error", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := ty.Write(canceled, batch("a")); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "dns/acme page 3") {
		t.Errorf("Write with an ended ctx = %v", err)
	}
	if s := ty.rec.Stats(); s.Writes != 2 {
		t.Errorf("%d pushes, want 2: an ended ctx pushes nothing", s.Writes)
	}
	got := gather(t, reg)
	for k, v := range map[string]float64{
		`collector_sink_errors_total{kind="invalid",sink="toy"}`:  1,
		`collector_sink_errors_total{kind="write",sink="toy"}`:    1,
		`collector_sink_errors_total{kind="canceled",sink="toy"}`: 1,
		`collector_sink_records_total{sink="toy"}`:                0,
		`collector_sink_write_duration_seconds_count{sink="toy"}`: 3,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if k := sinkhelper.KindOf(sinkhelper.Kind("outer", forGood)); k != "outer" {
		t.Errorf("KindOf takes the outermost mark, got %q", k)
	}
	if sinkhelper.Kind("x", nil) != nil {
		t.Error("Kind of nil is not nil")
	}
}

// Every step's error passes the scrub (WithErrorScrub) before Base returns
// it, and keeps its class: kind, permanence, a context's end.
func TestErrorScrubSeesEveryStepsErrorsAndKeepsTheirClass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	scr := secret.NewScrubber(secret.New("hunter2"))
	ty := newToy(t, nil, sinkhelper.WithErrorScrub(scr.Error),
		sinkhelper.WithReady(func(context.Context) error {
			return fmt.Errorf("ping: server says key=hunter2: %w", context.DeadlineExceeded)
		}),
		sinkhelper.WithClose(func() error { return errors.New("close: hunter2") }))
	ty.startErr = errors.New("server refused password hunter2")
	err := ty.Start(ctx)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Start = %v", err)
	}
	if err := ty.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ty.Ready(ctx); strings.Contains(fmt.Sprint(err), "hunter2") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ready = %v", err)
	}
	ty.rec.FailNext(1, sink.Permanent(sinkhelper.Kind("insert", errors.New("server echoed hunter2"))))
	err = ty.Write(ctx, batch("a"))
	if strings.Contains(fmt.Sprint(err), "hunter2") || !sink.IsPermanent(err) || sinkhelper.KindOf(err) != "insert" {
		t.Errorf("Write = %v: permanent %v, kind %q", err, sink.IsPermanent(err), sinkhelper.KindOf(err))
	}
	if err := ty.Shutdown(ctx); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Shutdown = %v", err)
	}
}

func TestShutdownDrainsThenWaitsForTheWritesInFlightThenCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ty := newToy(t, nil)
		if err := ty.Start(ctx); err != nil {
			t.Fatal(err)
		}
		release := ty.rec.Hold()
		var wg sync.WaitGroup
		for _, id := range []string{"a", "b"} {
			wg.Go(func() {
				if err := ty.Write(ctx, batch(id)); err != nil {
					t.Errorf("Write in flight at Shutdown: %v", err)
				}
			})
		}
		if err := ty.rec.WaitFor(ctx, func(s sinktest.Stats) bool { return s.Waiting == 2 }); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- ty.Shutdown(ctx) }()
		synctest.Wait()
		if got := ty.stepsNow(); !slices.Equal(got, []string{"start", "drain"}) {
			t.Fatalf("steps before the writes ended: %q, want start, drain", got)
		}
		if err := ty.Write(ctx, batch("c")); !errors.Is(err, sinkhelper.ErrClosed) {
			t.Errorf("Write during Shutdown = %v, want ErrClosed", err)
		}
		release()
		wg.Wait()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := ty.stepsNow(); !slices.Equal(got, []string{"start", "drain", "close"}) {
			t.Errorf("steps %q", got)
		}
		if s := ty.rec.Stats(); s.Batches != 2 {
			t.Errorf("%d batches written, want the 2 in flight", s.Batches)
		}
	})
}

func TestAShutdownOutOfTimeLeavesTheCloseToTheLastWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ty := newToy(t, nil)
		if err := ty.Start(ctx); err != nil {
			t.Fatal(err)
		}
		release := ty.rec.Hold()
		var wg sync.WaitGroup
		wg.Go(func() { _ = ty.Write(ctx, batch("a")) })
		synctest.Wait()

		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := ty.Shutdown(short); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 writes under way") {
			t.Fatalf("Shutdown = %v, want DeadlineExceeded naming the write", err)
		}
		if got := ty.stepsNow(); slices.Contains(got, "close") {
			t.Fatalf("closed under a Write in flight: %q", got)
		}
		// A second Shutdown waits for the close, up to its ctx.
		again, cancel2 := context.WithTimeout(ctx, time.Second)
		defer cancel2()
		if err := ty.Shutdown(again); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("second Shutdown while the write is held = %v", err)
		}
		release()
		wg.Wait()
		if got := ty.stepsNow(); !slices.Equal(got, []string{"start", "drain", "close"}) {
			t.Errorf("steps %q, want the last write to close", got)
		}
		if err := ty.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown after the close = %v", err)
		}
	})
}

// TestConcurrentWritesAndShutdown runs under -race: every Write either
// writes or is refused with ErrClosed, and the close step runs after the
// last write.
func TestConcurrentWritesAndShutdown(t *testing.T) {
	ctx := context.Background()
	ty := newToy(t, nil)
	if err := ty.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				err := ty.Write(ctx, batch(string(rune('a'+g)), string(rune('0'+i%10))))
				switch {
				case err == nil:
					mu.Lock()
					ok++
					mu.Unlock()
				case !errors.Is(err, sinkhelper.ErrClosed):
					t.Errorf("Write = %v", err)
				}
			}
		})
	}
	if err := ty.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	closedAt := ty.rec.Stats().Batches
	wg.Wait()
	if s := ty.rec.Stats(); s.Batches != ok || closedAt != ok {
		t.Errorf("%d written, %d acknowledged, %d written when closed", s.Batches, ok, closedAt)
	}
}

func TestDeadLettersAreFsyncedLinesCountedBySinkAndReason(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	dir := filepath.Join(t.TempDir(), "state")
	ty := newToy(t, reg, sinkhelper.WithDeadLetters(dir, "topic"))
	if err := ty.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ty.Write(ctx, batch("dead-a", "b", "dead-c")); err != nil {
		t.Fatal(err)
	}
	if err := ty.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, sinkhelper.DeadLetterFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 || lines[0]["id"] != "dead-a" || lines[0]["sink"] != "toy" || lines[0]["topic"] != "svc.dns" ||
		lines[0]["reason"] != `too large: "dead-a"` || lines[0]["dead_lettered_at"] == nil || lines[1]["id"] != "dead-c" {
		t.Fatalf("lines %v", lines)
	}
	got := gather(t, reg)
	for k, v := range map[string]float64{
		`collector_dead_letters_total{reason="too_large",sink="toy"}`: 2,
		`collector_sink_records_total{sink="toy"}`:                    1,
		`collector_sink_bytes_total{sink="toy"}`:                      10,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// A push's dead letters are part of its write: when the dead-letter file
// cannot take them, nothing of the batch counts as written and the Write
// fails with kind dead_letter, which exists from the start.
func TestAWriteWhoseDeadLettersCannotBeStoredFails(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	dir := filepath.Join(t.TempDir(), "state")
	ty := newToy(t, reg, sinkhelper.WithDeadLetters(dir, "topic"))
	if _, ok := gather(t, reg)[`collector_sink_errors_total{kind="dead_letter",sink="toy"}`]; !ok {
		t.Error("no dead_letter error series before the first error")
	}
	if err := ty.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should be: it cannot be opened for append.
	if err := os.Mkdir(filepath.Join(dir, sinkhelper.DeadLetterFile), 0o750); err != nil {
		t.Fatal(err)
	}
	err := ty.Write(ctx, batch("b", "dead-a"))
	if err == nil || sinkhelper.KindOf(err) != sinkhelper.KindDeadLetter || !strings.Contains(err.Error(), "toy sink: write dns/acme page 3") {
		t.Fatalf("Write = %v, want a dead_letter error naming the batch", err)
	}
	if err := ty.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := gather(t, reg)
	if got[`collector_sink_errors_total{kind="dead_letter",sink="toy"}`] != 1 || got[`collector_sink_records_total{sink="toy"}`] != 0 {
		t.Errorf("errors %v, records %v: want 1 dead_letter error and nothing written",
			got[`collector_sink_errors_total{kind="dead_letter",sink="toy"}`], got[`collector_sink_records_total{sink="toy"}`])
	}

	noDL := newToy(t, nil)
	if err := noDL.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := noDL.Write(ctx, batch("dead-a")); sinkhelper.KindOf(err) != sinkhelper.KindDeadLetter {
		t.Errorf("a sink without a dead-letter file: Write = %v, want kind dead_letter", err)
	}
	if err := noDL.Shutdown(ctx); err != nil {
		t.Fatal(err)
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
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+`="`+lp.GetValue()+`"`)
			}
			l := "{" + strings.Join(labels, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[mf.GetName()+l] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[mf.GetName()+"_count"+l] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
