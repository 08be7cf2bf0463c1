package sinktest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/sinktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func batch(ids ...string) *record.Batch {
	b := &record.Batch{Source: "dns", Account: "acme"}
	for _, id := range ids {
		b.Envelopes = append(b.Envelopes, record.Envelope{ID: id, Source: "dns", Account: "acme", Record: []byte(`{"id":"` + id + `"}`)})
	}
	return b
}

func TestRecordsDeepCopies(t *testing.T) {
	var r sinktest.Recorder
	b := batch("a", "b")
	if err := r.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	b.Envelopes[0].Record[2] = 'X' // the caller reuses its buffer
	b.Envelopes[1].ID = "changed"
	got := r.Envelopes()
	if len(got) != 2 || got[0].ID != "a" || string(got[0].Record) != `{"id":"a"}` || got[1].ID != "b" {
		t.Fatalf("recorded %+v", got)
	}
	got[0].Record[0] = '!' // nor can a reader change what is recorded
	if string(r.Batches()[0].Envelopes[0].Record) != `{"id":"a"}` {
		t.Fatal("Batches returned shared bytes")
	}
	if s := r.Stats(); s.Writes != 1 || s.Batches != 1 || s.Records != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestFailNextFailsThatManyWritesWithoutRecording(t *testing.T) {
	var r sinktest.Recorder
	boom := errors.New("boom")
	r.FailNext(2, boom)
	ctx := context.Background()
	for i := range 2 {
		if err := r.Write(ctx, batch("a")); !errors.Is(err, boom) {
			t.Fatalf("write %d = %v, want boom", i, err)
		}
	}
	if err := r.Write(ctx, batch("a")); err != nil {
		t.Fatalf("third write = %v", err)
	}
	r.FailNext(1, nil)
	if err := r.Write(ctx, batch("b")); !errors.Is(err, sinktest.ErrInjected) {
		t.Fatalf("err = %v, want ErrInjected", err)
	}
	if s := r.Stats(); s.Writes != 4 || s.Failed != 3 || s.Batches != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestHoldBlocksWritesUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r sinktest.Recorder
		release := r.Hold()
		ctx := context.Background()
		var wg sync.WaitGroup
		for _, id := range []string{"a", "b", "c"} {
			wg.Go(func() {
				if err := r.Write(ctx, batch(id)); err != nil {
					t.Error(err)
				}
			})
		}
		if err := r.WaitFor(ctx, func(s sinktest.Stats) bool { return s.Waiting == 3 }); err != nil {
			t.Fatal(err)
		}
		if s := r.Stats(); s.Batches != 0 {
			t.Fatalf("recorded while held: %+v", s)
		}
		// A held Write gives up with its ctx.
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := r.Write(short, batch("d")); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
		release()
		release()
		wg.Wait()
		if s := r.Stats(); s.Batches != 3 || s.Waiting != 0 || s.Failed != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}

func TestLifecycleCallsAreCounted(t *testing.T) {
	var r sinktest.Recorder
	ctx := context.Background()
	notReady := errors.New("not ready")
	_ = r.Start(ctx)
	r.SetReady(notReady)
	if err := r.Ready(ctx); !errors.Is(err, notReady) {
		t.Fatalf("Ready = %v", err)
	}
	_ = r.Shutdown(ctx)
	_ = r.Shutdown(ctx)
	if err := r.Write(ctx, batch("a")); !errors.Is(err, sinktest.ErrShutdown) {
		t.Fatalf("Write after Shutdown = %v", err)
	}
	if s := r.Stats(); s.Starts != 1 || s.Readies != 1 || s.Shutdowns != 2 || s.Failed != 1 {
		t.Fatalf("stats %+v", s)
	}
}
