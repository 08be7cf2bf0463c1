package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// stepClock moves only when told.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// The warning limiter writes one line per (stream, kind) per interval and
// says how many it held back.
func TestLimiter_OneLinePerStreamAndKindPerInterval(t *testing.T) {
	var buf bytes.Buffer
	clk := &stepClock{t: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)}
	l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), clk.Now, time.Minute)
	for range 1000 {
		l.Warn(t.Context(), "dns/acme", "bad_record_time_unreadable", "flawed")
	}
	l.Warn(t.Context(), "dns/acme", "retry_5xx", "retrying")
	l.Warn(t.Context(), "dns/other", "bad_record_time_unreadable", "flawed")
	clk.Advance(59 * time.Second)
	if l.Warn(t.Context(), "dns/acme", "bad_record_time_unreadable", "flawed") {
		t.Fatal("a second line within the interval")
	}
	clk.Advance(time.Second)
	if !l.Warn(t.Context(), "dns/acme", "bad_record_time_unreadable", "flawed", "record_id", "x") {
		t.Fatal("no line after the interval")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{
		"level=WARN msg=flawed stream=dns/acme kind=bad_record_time_unreadable suppressed=0",
		"msg=retrying stream=dns/acme kind=retry_5xx suppressed=0",
		"stream=dns/other kind=bad_record_time_unreadable suppressed=0",
		"msg=flawed record_id=x stream=dns/acme kind=bad_record_time_unreadable suppressed=1000",
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want %q", i, lines[i], want)
		}
	}
	var nilLimiter *Limiter
	if nilLimiter.Warn(t.Context(), "a", "b", "c") {
		t.Fatal("a nil limiter wrote")
	}
}

func TestNewFillsDefaults(t *testing.T) {
	l := New(nil, nil, 0)
	if l.Every() != DefaultEvery {
		t.Fatalf("every = %v, want %v", l.Every(), DefaultEvery)
	}
	if !l.Warn(t.Context(), "s", "k", "discarded") {
		t.Fatal("the first line of a pair is written (here: discarded)")
	}
}
