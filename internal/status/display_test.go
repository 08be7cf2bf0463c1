package status

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/source"
	"github.com/svcexport/collector/internal/testinfra/simtest"
	"github.com/svcexport/collector/internal/window"
)

// The backlog a stream covered counts the watermark's move and, within
// the window in flight, the rows delivered at the learned density.
func TestRunPart_CountsTheWatermarkAndTheWindowInFlight(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	s := source.Snapshot{
		Stream: record.Stream{Source: "dns", Account: "acme"}, Started: t0.Add(48 * time.Hour), StartWatermark: t0,
		Watermark: t0.Add(12 * time.Hour), Density: 1000,
		Backlog:  window.Backlog{Behind: 36 * time.Hour},
		InFlight: &cursor.Chain{Window: window.Window{Start: t0.Add(12 * time.Hour), End: t0.Add(24 * time.Hour)}, Rows: 6000},
	}
	done, total, started := runPart(s)
	if !started || done != 18*time.Hour || total != 48*time.Hour {
		t.Fatalf("done %v total %v started %v; want 12h moved + 6h of the window in flight, of 48h", done, total, started)
	}
	if p := percent(done, total); p != 37.5 {
		t.Fatalf("percent %v", p)
	}
	// 18h covered in 10 minutes: 30h left take about 16m40s.
	eta, ok := streamETA(s, s.Started.Add(10*time.Minute))
	if !ok || eta.Round(time.Second) != 16*time.Minute+40*time.Second {
		t.Fatalf("eta %v %v", eta, ok)
	}
	if _, _, started := runPart(source.Snapshot{}); started {
		t.Fatal("a poller not started yet has no part")
	}
	if percent(0, 0) != 100 {
		t.Fatal("nothing to do is done")
	}
}

func TestRateWindow_LooksBackAFewSeconds(t *testing.T) {
	var r rateWindow
	t0 := time.Now()
	if got := r.add(t0, 0); got != 0 {
		t.Fatalf("first sample %v", got)
	}
	for i := 1; i <= 20; i++ {
		got := r.add(t0.Add(time.Duration(i)*time.Second), int64(i*100))
		if got != 100 {
			t.Fatalf("at %ds: %v rows/s, want 100", i, got)
		}
	}
	if len(r.at) > 7 {
		t.Fatalf("kept %d samples", len(r.at))
	}
}

// The bars show each source's percent, rate and ETA; log lines written
// meanwhile come out whole, above them, and after Close straight out.
func TestBars_ShowPercentRateAndETAWithLogsAbove(t *testing.T) {
	var out simtest.SyncBuffer
	d := NewBars(&out, 10*time.Millisecond)
	d.Show([]SourceProgress{
		{Source: "dns", Percent: 42.5, RowsPerSecond: 12345, ETA: 90 * time.Second, ETAKnown: true},
		{Source: "audit_logs", Percent: 100, CaughtUp: true},
	})
	if _, err := d.Write([]byte("level=INFO msg=progress\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // a refresh or two; nothing depends on how many
	d.Close()
	if _, err := d.Write([]byte("level=INFO msg=done\n")); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"dns", "42.5%", "12k rows/s", "ETA 1m30s", "audit_logs", "100.0%", "ETA caught up", "msg=progress\n", "msg=done\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("display lacks %q:\n%s", want, got)
		}
	}
	if i, j := strings.Index(got, "msg=progress"), strings.LastIndex(got, "msg=done"); i < 0 || j < i {
		t.Fatalf("log lines out of order:\n%s", got)
	}
}

// Not on a terminal, --watch prints one snapshot after another: tables
// with a header, or one JSON array a line (notes apart).
func TestWatch_PrintsSuccessiveSnapshots(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		var out, notes bytes.Buffer
		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		snap := func(context.Context) ([]StreamState, string, error) {
			n++
			if n == 3 {
				cancel()
			}
			if n == 2 {
				return nil, "", errors.New("checkpoint locked")
			}
			return []StreamState{{Source: "dns", Account: "acme", Delivered: int64(n), ETASeconds: -1, RowsLeft: -1}}, "from the checkpoint x", nil
		}
		if err := Watch(ctx, &out, &notes, WatchOptions{Every: time.Millisecond, JSON: asJSON}, snap); err != nil {
			t.Fatal(err)
		}
		if asJSON {
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 1 { // the second failed, the third came after the cancel
				t.Fatalf("json lines: %q", lines)
			}
			var st []StreamState
			if err := json.Unmarshal([]byte(lines[0]), &st); err != nil || st[0].Delivered != 1 {
				t.Fatalf("json %q: %v", lines[0], err)
			}
			if !strings.Contains(notes.String(), "from the checkpoint x") || !strings.Contains(notes.String(), "checkpoint locked") {
				t.Fatalf("notes %q", notes.String())
			}
			continue
		}
		if c := strings.Count(out.String(), "collector state at"); c != 2 || !strings.Contains(out.String(), "error: checkpoint locked") {
			t.Fatalf("%d table snapshots:\n%s", c, out.String())
		}
	}
}

// "done" (and every progress line) says 100% once every stream is caught
// up, although a stream tailing keeps its watermark behind now (the lag,
// the time since its last poll): that is no backlog left.
func TestOverall_EveryStreamCaughtUpIsAHundredPercent(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	now := t0.Add(72 * time.Hour)
	snaps := []source.Snapshot{
		{Stream: record.Stream{Source: "dns", Account: "acme"}, Started: t0.Add(48 * time.Hour), StartWatermark: t0,
			Watermark: now.Add(-10 * time.Minute), CaughtUp: true, Backlog: window.Backlog{Behind: 10 * time.Minute}},
		// Caught up from the start: it moved nothing in this run.
		{Stream: record.Stream{Source: "connections", Account: "acme"}, Started: t0.Add(48 * time.Hour), StartWatermark: now.Add(-20 * time.Minute),
			Watermark: now.Add(-20 * time.Minute), CaughtUp: true, Backlog: window.Backlog{Behind: 20 * time.Minute}},
	}
	if pct, eta := overall(snaps, now); pct != 100 || eta != "0s" {
		t.Fatalf("every stream caught up: %v%% eta %s, want 100%% eta 0s", pct, eta)
	}
	// One stream still behind: less than 100.
	snaps[1].CaughtUp = false
	if pct, _ := overall(snaps, now); pct >= 100 {
		t.Fatalf("a stream behind: %v%%, want less than 100", pct)
	}
}
