package apisim

import (
	"context"
	"strings"
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

// late_share_after replaces late_share from late_switch on: few records
// late by up to hours before it, many late by minutes after it.
func TestLateShareAfterTheSwitchReplacesTheShare(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	sw := now.Add(-2 * time.Hour)
	cfg := DefaultConfig()
	cfg.Now = func() time.Time { return now }
	cfg.LateMax, cfg.LateShare = 5*time.Hour, 0.02
	cfg.LateMaxAfter, cfg.LateSwitch, cfg.LateShareAfter = 10*time.Minute, sw, 0.5
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := srv.TruthList(context.Background(), "dns", "acme", now.Add(-4*time.Hour), now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var before, lateBefore, after, lateAfter int
	for _, v := range vs {
		d := v.At.Sub(v.Time)
		if v.Time.Before(sw) {
			before++
			if d > 0 {
				lateBefore++
			}
			continue
		}
		after++
		if d > 0 {
			lateAfter++
		}
		if d > cfg.LateMaxAfter {
			t.Fatalf("record after the switch %v late, want at most %v", d, cfg.LateMaxAfter)
		}
	}
	if before < 1000 || after < 1000 {
		t.Fatalf("%d records before the switch, %d after: too few to tell", before, after)
	}
	sb, sa := float64(lateBefore)/float64(before), float64(lateAfter)/float64(after)
	if sb < 0.01 || sb > 0.03 || sa < 0.4 || sa > 0.6 {
		t.Errorf("late shares %.3f before the switch and %.3f after, want about 0.02 and 0.5", sb, sa)
	}
	cfg.LateShareAfter = 1.5
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "late_share_after") {
		t.Errorf("a share of 1.5: %v", err)
	}
}
