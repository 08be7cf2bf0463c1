package recheck

import (
	"slices"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// Before anything was learnt the dense phase reaches the prior (5 min)
// plus a cadence; records recovered within 3 minutes bring it to 3
// minutes plus a cadence; a platform whose delays grow to 12 minutes moves
// it past 12 minutes at once; and what was learnt fades with time, so that
// it comes back when the delays shrink again. The sparse points always
// end at 24h.
func TestLearntPointsFollowThePlatformsDelays(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	now := t0
	var d cursor.Delays
	cad := 30 * time.Second
	l := c.Learnt(d, cursor.Delays{}, cad)
	if l.Dense != autoPrior+cad || l.Last() != 24*time.Hour || l.Points[0] != 2*l.Dense {
		t.Fatalf("prior: dense %v, points %v", l.Dense, l.Points)
	}
	if v := l.Config(); !slices.Equal(v.Offsets, c.Offsets) || v.Horizon != c.Horizon {
		t.Fatalf("learning changed the settings: %+v", v)
	}
	v := c
	v.Offsets = l.Points
	if err := v.Validate(); err != nil {
		t.Fatal(err)
	}
	ObserveFresh(&d, 10_000, now)
	for i := range 300 {
		ObserveLate(&d, time.Duration(i%170)*time.Second, now) // up to 2m50s
	}
	l = c.Learnt(d, cursor.Delays{}, cad)
	if l.Dense != 3*time.Minute+cad {
		t.Errorf("delays up to 2m50s: dense %v, want %v", l.Dense, 3*time.Minute+cad)
	}
	if s := LateShare(d, 2*time.Minute); s <= 0 || s > 0.03 {
		t.Errorf("share later than 2m = %.4f, want about 300*50/170/10300", s)
	}
	if s := LateShare(d, 5*time.Minute); s != 0 {
		t.Errorf("share later than 5m = %v, want 0", s)
	}
	// The platform slows down: 50 records found at a 12-minute point.
	now = now.Add(10 * time.Minute)
	for range 50 {
		ObserveLate(&d, 11*time.Minute, now)
	}
	l = c.Learnt(d, cursor.Delays{}, cad)
	if l.Dense < 11*time.Minute {
		t.Errorf("after records 11 min late: dense %v, want past 11m", l.Dense)
	}
	// It speeds up again: the slow records fade, the fast ones come back.
	now = now.Add(4 * time.Hour)
	for range 300 {
		ObserveLate(&d, time.Minute, now)
	}
	l = c.Learnt(d, cursor.Delays{}, cad)
	if l.Dense != time.Minute+cad {
		t.Errorf("4 h later, records 1 min late: dense %v, want %v", l.Dense, time.Minute+cad)
	}
	fixed := fixedConfig()
	if got := fixed.Learnt(d, cursor.Delays{}, cad); got.Dense != 0 || len(got.Points) != 3 {
		t.Errorf("fixed points learnt: %+v", got)
	}
}

// A sweep makes every window that ended less than Dense ago due, so that
// one count covers them all; without Sweep only the points apply.
func TestASweepCountsEveryRecentWindowAsOneUnit(t *testing.T) {
	t.Parallel()
	c := DefaultConfig().Learnt(cursor.Delays{}, cursor.Delays{}, time.Minute) // dense 6m
	var log []cursor.LoggedWindow
	for i := range 20 { // 20 windows of 30 s, the last ending at 10 min
		log = append(log, cursor.LoggedWindow{Start: t0.Add(time.Duration(i) * 30 * time.Second),
			End: t0.Add(time.Duration(i+1) * 30 * time.Second), Count: 5, FetchedAt: t0.Add(time.Duration(i+1) * 30 * time.Second)})
	}
	now := t0.Add(11 * time.Minute)
	last := log[len(log)-1].End
	if us := c.Due(log, now); len(us) != 0 {
		t.Fatalf("without a sweep: %d units due", len(us))
	}
	c.Sweep = true
	us := c.Due(log, now)
	if len(us) != 1 || !us[0].End().Equal(last) || now.Sub(us[0].Start()) > c.Dense+30*time.Second || now.Sub(us[0].Start()) < c.Dense-30*time.Second {
		t.Fatalf("sweep: %d units, first %v..%v, want one of the last %v", len(us), us[0].Start(), us[0].End(), c.Dense)
	}
	if us[0].Final {
		t.Error("a sweep is no last point")
	}
	// A window fetched less than a cadence ago has nothing new to show.
	log[len(log)-1].FetchedAt = now.Add(-time.Second)
	if us := c.Due(log, now); len(us) != 1 || !us[0].End().Equal(log[len(log)-2].End) {
		t.Errorf("a window just fetched was swept: %d units", len(us))
	}
}

// The cadence is the budget's: the streams sharing a limiter split three
// quarters of its cap, never asking more often than their interval.
func TestCadenceSharesTheCapAmongTheStreams(t *testing.T) {
	t.Parallel()
	l := NewLimiter(0.1, 480, time.Hour, nil) // cap 48 an hour
	l.Share(1, 1, 0.1)
	if got := l.Cadence(20 * time.Second); got != 100*time.Second {
		t.Errorf("one stream: %v, want 100s", got)
	}
	l.Share(10, 10, 0.1)
	if got := l.Cadence(20 * time.Second); got != 1000*time.Second {
		t.Errorf("ten streams: %v, want 1000s", got)
	}
	big := NewLimiter(0.5, 100_000, time.Hour, nil)
	big.Share(1, 1, 0.5)
	if got := big.Cadence(20 * time.Second); got != 20*time.Second {
		t.Errorf("a large budget: %v, want the interval", got)
	}
}
