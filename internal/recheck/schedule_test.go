package recheck

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

var t0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// win is the log entry of the minutes [a, b) after t0 with count n,
// fetched 30 minutes after its end: before every point.
func win(a, b int, n int64) cursor.LoggedWindow {
	return cursor.LoggedWindow{Start: t0.Add(time.Duration(a) * time.Minute), End: t0.Add(time.Duration(b) * time.Minute), Count: n,
		FetchedAt: t0.Add(time.Duration(b+30) * time.Minute), Passed: 30 * time.Minute}
}

// asked is w last asked d after its end.
func asked(w cursor.LoggedWindow, d time.Duration) cursor.LoggedWindow { w.Passed = d; return w }

func edgeWin(a, b int, n int64) cursor.LoggedWindow {
	w := win(a, b, n)
	w.Digest = strings.Repeat("0", 64)
	return w
}

func at(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }

// spans renders units as "[a,b)" in minutes after t0.
func spans(us []Unit) []string {
	var out []string
	for _, u := range us {
		out = append(out, "["+strconv.Itoa(int(u.Start().Sub(t0)/time.Minute))+","+strconv.Itoa(int(u.End().Sub(t0)/time.Minute))+")")
	}
	return out
}

func TestConfigDefaultsAreValidAndBadValuesNameTheirKey(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if h := DefaultConfig().HorizonOrDefault(); h != 25*time.Hour {
		t.Fatalf("default horizon %v, want 25h", h)
	}
	cases := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"a point that is not positive", func(c *Config) { c.Offsets = []time.Duration{0} }, "recheck: point 1 is 0s"},
		{"points out of order", func(c *Config) { c.Offsets = []time.Duration{time.Hour, time.Hour} }, "recheck: points must ascend"},
		{"a horizon before the last point", func(c *Config) { c.Horizon = time.Hour }, "recheck_horizon: 1h0m0s is not after the last recheck point"},
		{"a horizon at the last point: the window leaves as its last point comes", func(c *Config) { c.Horizon = 24 * time.Hour }, "recheck_horizon: 24h0m0s is not after the last recheck point 24h0m0s"},
		{"a negative horizon", func(c *Config) { c.Horizon = -1 }, "recheck_horizon:"},
		{"no share", func(c *Config) { c.Share = 0 }, "recheck_share:"},
		{"a share over one", func(c *Config) { c.Share = 1.5 }, "recheck_share:"},
		{"a negative refetch size", func(c *Config) { c.RefetchRows = -1 }, "recheck_refetch_rows:"},
		{"no requests", func(c *Config) { c.MaxRequests = 0 }, "recheck_max_requests:"},
		{"a span over the API's 7 days (C3)", func(c *Config) { c.MaxSpan = 8 * 24 * time.Hour }, "recheck_max_span:"},
		{"an edge max_rows under 2", func(c *Config) { c.EdgeMaxRows = 1 }, "edge.max_rows:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fixedConfig()
			tc.mut(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
	// No points: rechecks off, nothing due, nothing expires.
	off := fixedConfig()
	off.Offsets = nil
	if err := off.Validate(); err != nil || off.Enabled() {
		t.Fatalf("no points: %v, enabled %v", err, off.Enabled())
	}
	if due := off.Plan().Due([]cursor.LoggedWindow{win(0, 1, 1)}, at(10_000)); len(due) != 0 {
		t.Fatalf("due without points: %v", spans(due))
	}
}

func TestDue(t *testing.T) {
	c := fixedConfig()
	c.MaxSpan = 3 * time.Hour
	c.EdgeMaxRows = 100
	cases := []struct {
		name string
		log  []cursor.LoggedWindow
		now  time.Time
		want []string
	}{
		{"nothing is due before the first point", []cursor.LoggedWindow{win(0, 10, 1)}, at(69), nil},
		{"a window is due at its end plus the first point", []cursor.LoggedWindow{win(0, 10, 1)}, at(70), []string{"[0,10)"}},
		{"adjacent due windows merge into one unit", []cursor.LoggedWindow{win(0, 10, 1), win(10, 20, 1), win(20, 30, 1)}, at(95), []string{"[0,30)"}},
		{"a window not yet due cuts the run", []cursor.LoggedWindow{win(0, 10, 1), win(10, 20, 1), win(20, 30, 1)}, at(80), []string{"[0,20)"}},
		{"a gap in the log cuts the run: counts add up only over adjacent windows", []cursor.LoggedWindow{win(0, 10, 1), win(11, 20, 1)}, at(200), []string{"[0,10)", "[11,20)"}},
		{"windows at different points merge when both are due", []cursor.LoggedWindow{asked(win(0, 10, 1), time.Hour), win(10, 20, 1)}, at(10 + 6*60), []string{"[0,20)"}},
		{"a window with every point done is not due", []cursor.LoggedWindow{asked(win(0, 10, 1), 24*time.Hour), win(10, 20, 1)}, at(200), []string{"[10,20)"}},
		{"a window asked between points is due at the next", []cursor.LoggedWindow{asked(win(0, 10, 1), 3*time.Hour)}, at(10 + 6*60), []string{"[0,10)"}},
		{"and not before it", []cursor.LoggedWindow{asked(win(0, 10, 1), 3*time.Hour)}, at(10 + 6*60 - 1), nil},
		{"a run is cut at MaxSpan", []cursor.LoggedWindow{win(0, 60, 1), win(60, 120, 1), win(120, 180, 1), win(180, 240, 1)}, at(400), []string{"[0,180)", "[180,240)"}},
		{"edge windows merge while their rows stay at most half of max_rows (C6)", []cursor.LoggedWindow{edgeWin(0, 10, 30), edgeWin(10, 20, 20), edgeWin(20, 30, 1)}, at(100), []string{"[0,20)", "[20,30)"}},
		{"an edge window fuller than half of max_rows is a unit alone", []cursor.LoggedWindow{edgeWin(0, 10, 70), edgeWin(10, 20, 1)}, at(100), []string{"[0,10)", "[10,20)"}},
		{"core and edge windows never merge", []cursor.LoggedWindow{win(0, 10, 1), edgeWin(10, 20, 1)}, at(100), []string{"[0,10)", "[10,20)"}},
		{"units come oldest first whatever the log's order", []cursor.LoggedWindow{win(100, 110, 1), win(0, 10, 1), win(50, 60, 1)}, at(500), []string{"[0,10)", "[50,60)", "[100,110)"}},
		{"a window past the horizon is not due: it expired", []cursor.LoggedWindow{win(0, 10, 1), win(10, 20, 1)}, at(10 + 25*60), []string{"[10,20)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := spans(c.Plan().Due(tc.log, tc.now))
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("Due = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAUnitIsFinalWhenAWindowMakesItsLastRecheck(t *testing.T) {
	c := fixedConfig()
	log := []cursor.LoggedWindow{win(0, 10, 1), win(10, 20, 1)}
	if u := c.Plan().Due(log, at(20+60)); len(u) != 1 || u[0].Final {
		t.Fatalf("first point: %+v", u)
	}
	log[0].Passed, log[1].Passed = 6*time.Hour, 6*time.Hour
	if u := c.Plan().Due(log, at(10+24*60)); len(u) != 1 || !u[0].Final || len(u[0].Windows) != 1 {
		t.Fatalf("last point of the first window: %+v", u)
	}
}

func TestPendingExpiredNextDueAndPruning(t *testing.T) {
	c := fixedConfig()
	done := win(0, 10, 1)
	done.Passed = 24 * time.Hour
	log := []cursor.LoggedWindow{done, win(10, 20, 1), win(20, 30, 1), win(1000, 1010, 1)}
	now := at(20 + 25*60) // [10,20) is past the 25h horizon
	if n := c.Plan().Pending(log, now); n != 2 {
		t.Fatalf("Pending = %d, want 2 ([20,30) and [1000,1010))", n)
	}
	exp := c.Plan().Expired(log, now)
	if len(exp) != 1 || !exp[0].Start.Equal(at(10)) {
		t.Fatalf("Expired = %v, want [10,20) alone (the done window is no loss)", exp)
	}
	if cut := c.PruneBefore(now); !cut.Equal(at(20)) {
		t.Fatalf("PruneBefore = %v", cut)
	}
	next, ok := c.Plan().NextDue(log[3:], at(1000))
	if !ok || !next.Equal(at(1010+60)) {
		t.Fatalf("NextDue = %v %v, want the end plus 1h", next, ok)
	}
	if _, ok := c.Plan().NextDue([]cursor.LoggedWindow{done}, now); ok {
		t.Fatal("a done window falls due")
	}
}

func TestANewEntryStartsPastThePointsItsFetchAlreadyCovered(t *testing.T) {
	c := fixedConfig()
	cases := []struct {
		fetched time.Duration
		next    time.Duration // 0: done
	}{
		{30 * time.Minute, time.Hour},  // tailing: every point to go
		{time.Hour, 6 * time.Hour},     // fetched at a point: it is passed
		{2 * time.Hour, 6 * time.Hour}, // a late fetch covers the 1h point
		{24 * time.Hour, 0},            // a backfill: nothing to recheck
		{-time.Second, time.Hour},      // a clock step back: nothing passed
	}
	for _, tc := range cases {
		w := c.Plan().Entry(at(0), at(10), 5, "", at(10).Add(tc.fetched))
		at, ok := c.Plan().dueAt(w)
		if w.Passed != max(tc.fetched, 0) || c.Plan().Done(w) != (tc.next == 0) || w.Count != 5 || ok && !at.Equal(w.End.Add(tc.next)) {
			t.Errorf("fetched %v after the end: %+v, done %v, due at %v; want the point %v next", tc.fetched, w, c.Plan().Done(w), at, tc.next)
		}
	}
}

func TestIndexPlacesATimeInItsWindow(t *testing.T) {
	u := fixedConfig().Plan().Due([]cursor.LoggedWindow{win(0, 10, 1), win(10, 20, 1)}, at(200))[0]
	for _, tc := range []struct {
		t    time.Time
		want int
	}{{at(0), 0}, {at(10).Add(-time.Millisecond), 0}, {at(10), 1}, {at(19), 1}, {at(20), -1}, {at(-1), -1}} {
		if got := u.Index(tc.t); got != tc.want {
			t.Errorf("Index(%v) = %d, want %d", tc.t, got, tc.want)
		}
	}
}

// planOf is the plan of c with the points ps in force, as Learnt makes
// them.
func planOf(c Config, ps []time.Duration) Plan {
	p := c.Plan()
	p.Points = ps
	return p
}

// recheckAt asks the one window of log again at now under p, its count
// unchanged, and returns the log with its kept entry, stored as the
// poller stores it (Settle); it fails t unless exactly that window is due.
func recheckAt(t *testing.T, p Plan, log []cursor.LoggedWindow, now time.Time) (Unit, []cursor.LoggedWindow) {
	t.Helper()
	us := p.Due(log, now)
	if len(us) != 1 || len(us[0].Windows) != 1 {
		t.Fatalf("at %v after the end: %d units due, want the window", now.Sub(log[0].End), len(us))
	}
	n := us[0].Narrow()
	for _, ok := n.Next(); ok; _, ok = n.Next() {
		n.Observe(log[0].Count)
	}
	r := p.Settle(n.Result())
	if len(r.Keep) != 1 {
		t.Fatalf("recheck at %v: %+v", now.Sub(log[0].End), r)
	}
	return us[0], []cursor.LoggedWindow{r.Keep[0].Entry}
}

// Issue 29 item 3: the points of recheck: auto are recomputed from the
// learnt dense phase at every step. A window asked at 12m, 24m and 1h of
// [12m 24m 1h 6h 24h] (dense 6m) when the platform's delays grow and the
// points become [1h 6h 24h] still has its 6h and 24h points: it is due at
// 6h, not before, then at 24h (its last), then done. And a window that
// reaches the horizon before its points came counts as expired.
func TestAWindowKeepsItsLaterPointsWhenTheLearntPointsShrink(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	fast, slow := planOf(c, autoOffsets(6*time.Minute)), planOf(c, autoOffsets(46*time.Minute))
	want := func(p Plan, ds ...time.Duration) {
		t.Helper()
		if !slices.Equal(p.Points, ds) {
			t.Fatalf("points %v, want %v", p.Points, ds)
		}
	}
	want(fast, 12*time.Minute, 24*time.Minute, time.Hour, 6*time.Hour, 24*time.Hour)
	want(slow, time.Hour, 6*time.Hour, 24*time.Hour)
	e := fast.Entry(at(0), at(5), 10, "", at(5).Add(30*time.Second))
	log := []cursor.LoggedWindow{e}
	for _, p := range fast.Points[:3] {
		_, log = recheckAt(t, fast, log, e.End.Add(p))
	}
	// The delays grew: the points are [1h 6h 24h].
	if slow.Done(log[0]) {
		t.Fatal("asked at 1h of five points, the window counts as done under three: its 6h and 24h points are dropped")
	}
	if next, ok := slow.NextDue(log, e.End.Add(time.Hour)); !ok || !next.Equal(e.End.Add(6*time.Hour)) {
		t.Fatalf("next due %v %v after the end, want 6h", next.Sub(e.End), ok)
	}
	if us := slow.Due(log, e.End.Add(6*time.Hour-time.Second)); len(us) != 0 {
		t.Fatalf("due again before its 6h point: %v", spans(us))
	}
	// Expiry: left unasked past the horizon, the window is counted.
	if exp := slow.Expired(log, e.End.Add(c.HorizonOrDefault())); len(exp) != 1 {
		t.Fatalf("a window with points to go reached the horizon: %d expired, want 1", len(exp))
	}
	u, log := recheckAt(t, slow, log, e.End.Add(6*time.Hour))
	if u.Final {
		t.Fatal("the 6h point is not the last")
	}
	u, log = recheckAt(t, slow, log, e.End.Add(24*time.Hour))
	if !u.Final || !slow.Done(log[0]) || !fast.Done(log[0]) {
		t.Fatalf("the 24h point: final %v, done %v", u.Final, slow.Done(log[0]))
	}
	if exp := slow.Expired(log, e.End.Add(c.HorizonOrDefault())); len(exp) != 0 {
		t.Fatalf("a window done at its last point expired: %v", exp)
	}
}

// Issue 31 (one schedule): whatever the points were when a window was
// last asked and whatever they are now, it is due at the earlier of the
// due it stored (the first point after that ask of the points then) and
// the first of the current points after that ask: a schedule that grows,
// shrinks or moves its points brings a point sooner but never pushes one
// later, never marks done a window with a point promised, and never asks
// again one passed.
func TestEveryChangeOfThePointsKeepsThePointsStillToCome(t *testing.T) {
	t.Parallel()
	lists := [][]time.Duration{
		autoOffsets(2 * time.Minute),  // [4m 8m 16m 32m 1h 6h 24h]
		autoOffsets(6 * time.Minute),  // [12m 24m 1h 6h 24h]
		autoOffsets(15 * time.Minute), // [30m 1h 6h 24h]
		autoOffsets(time.Hour),        // [1h 6h 24h]
		{10 * time.Minute, 3 * time.Hour},
		DefaultOffsets(),
	}
	first := func(ps []time.Duration, after time.Duration) (time.Duration, bool) {
		i := slices.IndexFunc(ps, func(p time.Duration) bool { return p > after })
		if i < 0 {
			return 0, false
		}
		return ps[i], true
	}
	for _, from := range lists {
		for k := range len(from) + 1 {
			asked := 30 * time.Second // fetched, no point passed
			if k > 0 {
				asked = from[k-1] // asked at its k-th point
			}
			a := planOf(fixedConfig(), from)
			w := a.Entry(at(0), at(5), 10, "", at(5).Add(asked))
			promised, pok := first(from, asked)
			for _, to := range lists {
				b := planOf(fixedConfig(), to)
				want, ok := first(to, asked)
				if pok && (!ok || promised < want) {
					want, ok = promised, true
				}
				next, got := b.NextDue([]cursor.LoggedWindow{w}, w.End.Add(asked))
				desc := "no point"
				if got {
					desc = next.Sub(w.End).String()
				}
				switch {
				case !ok && (got || !b.Done(w)):
					t.Errorf("asked at %v of %v, now %v: next %s (done %v), want done", asked, from, to, desc, b.Done(w))
				case ok && (!got || !next.Equal(w.End.Add(want)) || b.Done(w)):
					t.Errorf("asked at %v of %v, now %v: next %s (done %v), want %v", asked, from, to, desc, b.Done(w), want)
				}
			}
		}
	}
}
