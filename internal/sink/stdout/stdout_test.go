package stdout_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
	"github.com/svcexport/collector/internal/sink/stdout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var winStart = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func batch(t testing.TB, account string, first, n int) *record.Batch {
	t.Helper()
	var bld record.Builder
	b := &record.Batch{Source: "dns", Account: account}
	for i := first; i < first+n; i++ {
		raw := fmt.Appendf(nil, `{"createdTime":"2026-11-22T10:00:00Z","id":%d,"queryName":"host-%d.example.com"}`, i, i)
		e, flaw := bld.Build("dns", account, "createdTime", winStart, winStart.Add(time.Hour), winStart.Add(2*time.Hour), raw)
		if flaw != 0 {
			t.Fatal(flaw)
		}
		b.Envelopes = append(b.Envelopes, e)
	}
	return b
}

func started(t *testing.T, cfg stdout.Config, w io.Writer) *stdout.Sink {
	t.Helper()
	s, err := stdout.New(cfg, w, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

func TestLinesAreTheEnvelopes(t *testing.T) {
	var buf bytes.Buffer
	s := started(t, stdout.DefaultConfig(), &buf)
	b := batch(t, "acme", 0, 20)
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 20 || !strings.HasSuffix(buf.String(), "\n") {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	for i, l := range lines {
		if want := string(b.Envelopes[i].AppendJSON(nil)); l != want {
			t.Fatalf("line %d:\n got %s\nwant %s", i, l, want)
		}
	}
}

func TestPrettyIndentsEachEnvelope(t *testing.T) {
	var buf bytes.Buffer
	s := started(t, stdout.Config{Pretty: true}, &buf)
	if err := s.Write(context.Background(), batch(t, "acme", 0, 2)); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	for i := range 2 {
		var v map[string]any
		if err := dec.Decode(&v); err != nil || v["source"] != "dns" {
			t.Fatalf("value %d: %v %v", i, v, err)
		}
	}
}

func TestConcurrentBatchesNeverInterleaveThroughAPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := started(t, stdout.DefaultConfig(), w)
	var lines []string
	read := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		read <- sc.Err()
	}()
	const writers, batches, size = 8, 10, 50
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range batches {
				if err := s.Write(context.Background(), batch(t, fmt.Sprintf("acct%d", g), i*size, size)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	w.Close()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	r.Close()
	if len(lines) != writers*batches*size {
		t.Fatalf("%d lines, want %d", len(lines), writers*batches*size)
	}
	// Each run of size lines comes from one batch: one account, in order.
	for i := 0; i < len(lines); i += size {
		var first struct{ Account string }
		if err := json.Unmarshal([]byte(lines[i]), &first); err != nil {
			t.Fatal(err)
		}
		for j := i; j < i+size; j++ {
			var e struct {
				Account string
				Record  struct{ ID int }
			}
			if err := json.Unmarshal([]byte(lines[j]), &e); err != nil {
				t.Fatalf("line %d: %v", j, err)
			}
			if e.Account != first.Account || e.Record.ID%size != j-i {
				t.Fatalf("line %d belongs to another batch: %s", j, lines[j])
			}
		}
	}
}

// failing accepts limit bytes, then fails.
type failing struct {
	bytes.Buffer
	limit int
}

func (f *failing) Write(p []byte) (int, error) {
	room := f.limit - f.Len()
	if room >= len(p) {
		return f.Buffer.Write(p)
	}
	n, _ := f.Buffer.Write(p[:max(room, 0)])
	return n, syscall.EPIPE
}

func TestAFailedBatchIsAnErrorAndTheNextStartsOnAFreshLine(t *testing.T) {
	out := &failing{limit: 100}
	s := started(t, stdout.DefaultConfig(), out)
	b := batch(t, "acme", 0, 3)
	if err := s.Write(context.Background(), b); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("err = %v, want EPIPE", err)
	}
	out.limit = 1 << 20
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want the torn one and 3: %q", len(lines), lines)
	}
	for i, l := range lines[1:] {
		if l != string(b.Envelopes[i].AppendJSON(nil)) {
			t.Fatalf("line %d after the torn one: %s", i+1, l)
		}
	}
}

func TestARegularFileIsSynced(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := started(t, stdout.DefaultConfig(), f)
	if err := s.Write(context.Background(), batch(t, "acme", 0, 5)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.Name())
	if err != nil || strings.Count(string(data), "\n") != 5 {
		t.Fatalf("file holds %q, %v", data, err)
	}
}

// blocking blocks every Write until release is closed.
type blocking struct{ release chan struct{} }

func (b blocking) Write(p []byte) (int, error) { <-b.release; return len(p), nil }

func TestWaitingForAStuckWriterHonoursCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := blocking{make(chan struct{})}
		s, err := stdout.New(stdout.DefaultConfig(), out, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := s.Write(context.Background(), batch(t, "acme", 0, 1)); err != nil {
				t.Error(err)
			}
		})
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := s.Write(ctx, batch(t, "acme", 1, 1)); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("second Write = %v, want DeadlineExceeded", err)
		}
		if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
		}
		close(out.release)
		wg.Wait()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	})
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	if _, err := stdout.New(stdout.DefaultConfig(), nil, nil); err == nil {
		t.Error("New accepted a nil writer")
	}
	s, err := stdout.New(stdout.DefaultConfig(), &buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := batch(t, "acme", 0, 1)
	if err := s.Write(ctx, b); !errors.Is(err, sinkhelper.ErrNotStarted) {
		t.Errorf("Write before Start = %v", err)
	}
	if err := s.Ready(ctx); !errors.Is(err, sinkhelper.ErrNotStarted) {
		t.Errorf("Ready before Start = %v", err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready = %v", err)
	}
	if err := s.Write(ctx, &record.Batch{}); err != nil || buf.Len() != 0 {
		t.Errorf("empty batch: %v, wrote %q", err, buf.String())
	}
	for range 2 {
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	if err := s.Write(ctx, b); !errors.Is(err, sinkhelper.ErrClosed) {
		t.Errorf("Write after Shutdown = %v", err)
	}
	never, _ := stdout.New(stdout.Config{}, &buf, nil)
	if err := never.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown without Start: %v", err)
	}
}
