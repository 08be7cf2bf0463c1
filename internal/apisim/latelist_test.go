package apisim

import (
	"context"
	"testing"
	"time"
)

// The truth list holds the records the count holds, each visible at its
// record time plus a delay within the configured bounds: a share of them
// late (late_share), and from late_switch on the delays of late_max_after.
func TestTruthListSaysWhenEachRecordBecameVisible(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	sw := now.Add(-30 * time.Minute)
	cfg := DefaultConfig()
	cfg.Now = func() time.Time { return now }
	cfg.LateMax, cfg.LateShare = 2*time.Minute, 0.3
	cfg.LateMaxAfter, cfg.LateSwitch = 10*time.Minute, sw
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start, end := now.Add(-time.Hour), now
	vs, err := srv.TruthList(context.Background(), "dns", "acme", start, end)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := srv.Truth("dns", "acme", start, end)
	if int64(len(vs)) != n || n < 1000 {
		t.Fatalf("list of %d records, count %d", len(vs), n)
	}
	late, lateAfter, longest := 0, 0, time.Duration(0)
	for _, v := range vs {
		if v.At.After(now) {
			t.Fatalf("record %s visible at %v, after now", v.ID, v.At)
		}
	}
	for _, v := range vs {
		tm := v.Time
		d := v.At.Sub(tm)
		if d > 0 {
			late++
			if !tm.Before(sw) {
				lateAfter++
			}
		}
		if tm.Before(sw) && d > cfg.LateMax {
			t.Fatalf("record before the switch %v late, want at most %v", d, cfg.LateMax)
		}
		longest = max(longest, d)
	}
	share := float64(late) / float64(len(vs))
	if share < 0.2 || share > 0.4 {
		t.Errorf("%.2f of the records late, want about 0.3", share)
	}
	if longest <= cfg.LateMax || longest > cfg.LateMaxAfter {
		t.Errorf("longest delay %v, want past %v (after the switch) and at most %v", longest, cfg.LateMax, cfg.LateMaxAfter)
	}
}
