package window

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const day = 24 * time.Hour

// now is deliberately off the second grid.
var now = time.Date(2026, 11, 22, 12, 0, 0, 250_000_000, time.UTC)

// sec is now's second: 12:00:00.
var sec = now.Truncate(time.Second)

func win(start, end time.Time) Window { return Window{Start: start, End: end} }

func TestNext(t *testing.T) {
	base := Planner{MaxWindow: 7 * day, Lag: 30 * time.Minute, TargetRows: 250_000, ResultCap: 500_000, MinWindow: time.Minute}
	with := func(f func(*Planner)) Planner { p := base; f(&p); return p }
	limit := sec.Add(-30 * time.Minute)                      // 11:30:00
	floor := sec.Add(-92*day + 15*time.Minute + time.Second) // rounded up
	backfill := sec.Add(-30 * day)

	cases := []struct {
		name      string
		p         Planner
		watermark time.Time
		density   float64
		want      Window
		wantOK    bool
	}{
		{"the first window of a backfill starts at the watermark and is MaxWindow long when the density is unknown",
			base, backfill, 0, win(backfill, backfill.Add(7*day)), true},
		{"a known density sizes the window for TargetRows rows",
			base, backfill, 100_000, win(backfill, backfill.Add(150*time.Minute)), true},
		{"a dense stream's window is never shorter than MinWindow",
			base, backfill, 1e9, win(backfill, backfill.Add(time.Minute)), true},
		{"an infinite density gives MinWindow",
			base, backfill, math.Inf(1), win(backfill, backfill.Add(time.Minute)), true},
		{"a sparse stream's window is never longer than MaxWindow",
			base, backfill, 1, win(backfill, backfill.Add(7*day)), true},
		{"a density that is not a number counts as unknown",
			base, backfill, math.NaN(), win(backfill, backfill.Add(7*day)), true},
		{"a density-sized end is rounded down to a whole second",
			base, backfill, 7_000, win(backfill, backfill.Add(35*time.Hour+42*time.Minute+51*time.Second)), true},
		{"the tailing window ends at now minus lag on a whole second",
			base, sec.Add(-2 * time.Hour), 0, win(sec.Add(-2*time.Hour), limit), true},
		{"there is no window when caught up",
			base, limit, 0, Window{}, false},
		{"there is no window when the watermark is past now minus lag",
			base, sec.Add(-10 * time.Minute), 0, Window{}, false},
		{"a watermark less than a second behind the limit gets a window to the limit",
			base, limit.Add(-500 * time.Millisecond), 0, win(limit.Add(-500*time.Millisecond), limit), true},
		{"a watermark off the millisecond grid starts on the millisecond before it",
			base, backfill.Add(123456789), 0, win(backfill.Add(123*time.Millisecond), backfill.Add(7*day)), true},
		{"overlap re-asks before the watermark",
			with(func(p *Planner) { p.Overlap = 10 * time.Minute }), sec.Add(-2 * time.Hour), 0,
			win(sec.Add(-2*time.Hour-10*time.Minute), limit), true},
		{"overlap never re-asks before max history",
			with(func(p *Planner) { p.Overlap = time.Hour }), floor.Add(5 * time.Minute), 0,
			win(floor, floor.Add(7*day)), true},
		{"overlap does not make a window when caught up",
			with(func(p *Planner) { p.Overlap = time.Hour }), limit, 0, Window{}, false},
		{"an overlap longer than the density-sized span still moves past the watermark",
			with(func(p *Planner) { p.Overlap = 2 * time.Hour }), backfill, 1_000_000,
			win(backfill.Add(-2*time.Hour), backfill.Add(time.Minute)), true},
		{"a watermark older than max history starts at the floor",
			base, sec.Add(-100 * day), 0, win(floor, floor.Add(7*day)), true},
		{"a zero watermark starts at the floor",
			base, time.Time{}, 0, win(floor, floor.Add(7*day)), true},
		{"the 7-day cap holds even when MaxWindow is larger",
			with(func(p *Planner) { p.MaxWindow = 30 * day }), backfill, 0, win(backfill, backfill.Add(7*day)), true},
		{"the 7-day cap includes the overlap",
			with(func(p *Planner) { p.Overlap = time.Hour }), backfill, 0,
			win(backfill.Add(-time.Hour), backfill.Add(7*day-time.Hour)), true},
		{"a shorter MaxWindow is honoured",
			with(func(p *Planner) { p.MaxWindow = day }), backfill, 0, win(backfill, backfill.Add(day)), true},
		{"the zero planner asks from the floor to now in 7-day windows",
			Planner{}, sec.Add(-3 * day), 0, win(sec.Add(-3*day), sec), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.p.Next(tc.watermark, now, tc.density)
			if ok != tc.wantOK || got != tc.want {
				t.Fatalf("Next = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
			if ok && got.Duration() > APIMaxWindow {
				t.Fatalf("window %v is %s long, over the API's 7 days", got, got.Duration())
			}
		})
	}
}

// TestNextTilesTime is a property test: with Overlap zero, the windows of
// successive Next calls tile [watermark, now - lag) without gap or overlap,
// whatever the densities, and each obeys every bound. Splitting a window
// tiles it too.
func TestNextTilesTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	windows, splits := 0, 0
	for run := range 300 {
		p := Planner{
			MaxWindow:  time.Duration(1+rng.IntN(10*24)) * time.Hour, // up to 10 days: capped to 7
			Lag:        time.Duration(rng.IntN(3600)) * time.Second,
			TargetRows: int64(100_000 + rng.IntN(400_000)),
			ResultCap:  500_000,
			MinWindow:  time.Duration(1+rng.IntN(600_000)) * time.Millisecond,
		}
		clock := now.Add(time.Duration(rng.Int64N(int64(day))))
		wm := clock.Add(-time.Duration(rng.Int64N(int64(100 * day)))).Truncate(time.Second)
		if run%3 == 0 {
			wm = wm.Add(time.Duration(rng.IntN(1000)) * time.Millisecond) // off the second grid
		}
		// Half the runs keep now still and must end exactly at now - lag;
		// the other half move now on by up to two hours a call.
		advancing := run%2 == 1
		for step := 0; ; step++ {
			if step > 100_000 {
				t.Fatalf("run %d: no end after %d windows", run, step)
			}
			if advancing && step == 300 {
				break
			}
			density := 0.0
			if rng.IntN(4) > 0 {
				density = math.Exp(rng.Float64() * 14) // 1 to 1.2e6 rows/hour
			}
			if advancing {
				clock = clock.Add(time.Duration(rng.Int64N(int64(2 * time.Hour))))
			}
			w, ok := p.Next(wm, clock, density)
			if !ok {
				if limit := p.Limit(clock); wm.Before(limit) {
					t.Fatalf("run %d: no window at watermark %v, but the limit is %v", run, wm, limit)
				}
				if advancing {
					continue
				}
				break
			}
			floor := p.Floor(clock)
			wantStart := wm.Truncate(time.Millisecond)
			if wantStart.Before(floor) {
				if step > 0 && !advancing {
					t.Fatalf("run %d: a later watermark %v fell behind the floor %v", run, wm, floor)
				}
				wantStart = floor
			}
			switch {
			case !w.Start.Equal(wantStart):
				t.Fatalf("run %d step %d: window %v starts at %v, want %v (gap or overlap)", run, step, w, w.Start, wantStart)
			case !w.End.After(w.Start):
				t.Fatalf("run %d step %d: empty window %v", run, step, w)
			case w.End.After(p.Limit(clock)):
				t.Fatalf("run %d step %d: window %v ends after now - lag %v", run, step, w, p.Limit(clock))
			case w.Start.Before(floor):
				t.Fatalf("run %d step %d: window %v starts before the floor %v", run, step, w, floor)
			case w.Duration() > min(p.MaxWindow, APIMaxWindow):
				t.Fatalf("run %d step %d: window %v is %s long", run, step, w, w.Duration())
			case !w.End.Equal(w.End.Truncate(time.Second)):
				t.Fatalf("run %d step %d: window %v does not end on a whole second", run, step, w)
			}
			if rng.IntN(8) == 0 {
				checkTiles(t, p, w, int64(rng.IntN(5_000_000)))
				splits++
			}
			wm = w.End
			windows++
		}
		if !advancing && !wm.Equal(p.Limit(clock)) {
			t.Fatalf("run %d: windows ended at %v, want now - lag %v", run, wm, p.Limit(clock))
		}
	}
	t.Logf("%d windows, %d splits checked", windows, splits)
	if windows < 10_000 {
		t.Fatalf("only %d windows: the property test exercises too little", windows)
	}
}

// checkTiles splits w and checks that the parts tile it and respect
// MinWindow.
func checkTiles(t *testing.T, p Planner, w Window, totalRows int64) {
	t.Helper()
	parts, err := p.Split(w, totalRows)
	if parts == nil {
		if totalRows >= 500_000 || err != nil {
			t.Fatalf("Split(%v, %d) = nil, %v", w, totalRows, err)
		}
		return
	}
	if err != nil {
		if !errors.Is(err, ErrTooDense) || len(parts) != 1 || parts[0] != w || w.Duration() >= 2*p.withDefaults().MinWindow {
			t.Fatalf("Split(%v, %d) = %v, %v", w, totalRows, parts, err)
		}
		return
	}
	at := w.Start
	for _, part := range parts {
		if !part.Start.Equal(at) || part.Duration() < p.withDefaults().MinWindow {
			t.Fatalf("Split(%v, %d): part %v does not follow %v or is under MinWindow", w, totalRows, part, at)
		}
		at = part.End
	}
	if !at.Equal(w.End) {
		t.Fatalf("Split(%v, %d): parts end at %v", w, totalRows, at)
	}
}

func TestReadyIsTheFirstInstantWithAWindow(t *testing.T) {
	for _, p := range []Planner{{}, {Lag: 30 * time.Minute}, {Lag: 90 * time.Second, Overlap: time.Hour}} {
		for _, wm := range []time.Time{sec, sec.Add(400 * time.Millisecond), sec.Add(-time.Nanosecond)} {
			ready := p.Ready(wm)
			if _, ok := p.Next(wm, ready.Add(-time.Nanosecond), 0); ok {
				t.Errorf("lag %s, watermark %v: a window before Ready %v", p.Lag, wm, ready)
			}
			if _, ok := p.Next(wm, ready, 0); !ok {
				t.Errorf("lag %s, watermark %v: no window at Ready %v", p.Lag, wm, ready)
			}
		}
	}
}

func TestUnreachableAndClamp(t *testing.T) {
	p := Planner{}
	floor := p.Floor(now)
	// now - 92d + 15m is 12:15:00.250, rounded up to a whole second.
	if want := sec.Add(-92*day + 15*time.Minute + time.Second); !floor.Equal(want) {
		t.Fatalf("Floor = %v, want %v", floor, want)
	}

	old := sec.Add(-100 * day)
	u, ok := p.Unreachable(old, now)
	if !ok || u != win(old, floor) {
		t.Fatalf("Unreachable of a watermark older than max history = %v, %v; want %v", u, ok, win(old, floor))
	}
	if u, ok := p.Unreachable(floor, now); ok {
		t.Fatalf("Unreachable at the floor = %v, want none", u)
	}

	w := win(floor.Add(-time.Hour), floor.Add(time.Hour))
	if got, ok := p.Clamp(w, now); !ok || got != win(floor, floor.Add(time.Hour)) {
		t.Fatalf("Clamp of a window across the floor = %v, %v", got, ok)
	}
	if got, ok := p.Clamp(win(floor.Add(-2*time.Hour), floor.Add(-time.Hour)), now); ok {
		t.Fatalf("Clamp of a window wholly before the floor = %v, want none", got)
	}
	if got, ok := p.Clamp(win(floor, floor.Add(time.Hour)), now); !ok || got != win(floor, floor.Add(time.Hour)) {
		t.Fatalf("Clamp of a reachable window changed it: %v", got)
	}
}

func TestSplit(t *testing.T) {
	p := Planner{TargetRows: 250_000, ResultCap: 500_000, MinWindow: time.Minute}
	d1 := win(sec, sec.Add(day))
	cases := []struct {
		name      string
		w         Window
		totalRows int64
		want      []Window
		wantErr   error
	}{
		{"a window under the cap is not split", d1, 499_999, nil, nil},
		{"an empty result is not split", d1, 0, nil, nil},
		{"a window at the cap is split in two, as it may be truncated", d1, 500_000,
			[]Window{win(sec, sec.Add(12*time.Hour)), win(sec.Add(12*time.Hour), sec.Add(day))}, nil},
		{"a window over the cap is split into ceil(totalRows / TargetRows) equal parts", d1, 1_200_000,
			[]Window{
				win(sec, sec.Add(288*time.Minute)),
				win(sec.Add(288*time.Minute), sec.Add(576*time.Minute)),
				win(sec.Add(576*time.Minute), sec.Add(864*time.Minute)),
				win(sec.Add(864*time.Minute), sec.Add(1152*time.Minute)),
				win(sec.Add(1152*time.Minute), sec.Add(day)),
			}, nil},
		{"parts are on whole milliseconds and the last takes the remainder",
			win(sec, sec.Add(10*time.Minute)), 750_000,
			[]Window{
				win(sec, sec.Add(200*time.Second)),
				win(sec.Add(200*time.Second), sec.Add(400*time.Second)),
				win(sec.Add(400*time.Second), sec.Add(10*time.Minute)),
			}, nil},
		{"uneven parts are cut on whole milliseconds",
			win(sec, sec.Add(10*time.Minute+1*time.Second)), 1_500_000,
			[]Window{
				win(sec, sec.Add(100166*time.Millisecond)),
				win(sec.Add(100166*time.Millisecond), sec.Add(200332*time.Millisecond)),
				win(sec.Add(200332*time.Millisecond), sec.Add(300498*time.Millisecond)),
				win(sec.Add(300498*time.Millisecond), sec.Add(400664*time.Millisecond)),
				win(sec.Add(400664*time.Millisecond), sec.Add(500830*time.Millisecond)),
				win(sec.Add(500830*time.Millisecond), sec.Add(601*time.Second)),
			}, nil},
		{"a short window is cut into fewer parts so that none is below MinWindow",
			win(sec, sec.Add(3*time.Minute+30*time.Second)), 5_000_000,
			[]Window{
				win(sec, sec.Add(70*time.Second)),
				win(sec.Add(70*time.Second), sec.Add(140*time.Second)),
				win(sec.Add(140*time.Second), sec.Add(210*time.Second)),
			}, nil},
		{"a window of MinWindow that is still too large comes back unsplit with ErrTooDense",
			win(sec, sec.Add(time.Minute)), 900_000, []Window{win(sec, sec.Add(time.Minute))}, ErrTooDense},
		{"a window just under two MinWindows comes back unsplit with ErrTooDense",
			win(sec, sec.Add(2*time.Minute-time.Millisecond)), 500_000,
			[]Window{win(sec, sec.Add(2*time.Minute-time.Millisecond))}, ErrTooDense},
		{"a window of exactly two MinWindows is split in two",
			win(sec, sec.Add(2*time.Minute)), 500_000,
			[]Window{win(sec, sec.Add(time.Minute)), win(sec.Add(time.Minute), sec.Add(2*time.Minute))}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Split(tc.w, tc.totalRows)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Split error = %v, want %v", err, tc.wantErr)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Split = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("part %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
			if tc.want != nil {
				checkTiles(t, p, tc.w, tc.totalRows)
			}
		})
	}

	t.Run("a huge count is cut into at most MaxSplitParts parts", func(t *testing.T) {
		got, err := Planner{MinWindow: time.Millisecond}.Split(win(sec, sec.Add(7*day)), 1e12)
		if err != nil || len(got) != MaxSplitParts {
			t.Fatalf("Split = %d parts, %v; want %d", len(got), err, MaxSplitParts)
		}
	})
	t.Run("the error names the window and the row count", func(t *testing.T) {
		_, err := p.Split(win(sec, sec.Add(time.Minute)), 900_000)
		var tde *TooDenseError
		if !errors.As(err, &tde) || tde.TotalRows != 900_000 || tde.MinWindow != time.Minute {
			t.Fatalf("error = %#v", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "900000 rows") || !strings.Contains(msg, "2026-11-22T12:00:00.000Z") {
			t.Fatalf("error %q does not name the window and the rows", msg)
		}
	})
}

func TestSplitFull(t *testing.T) {
	p := Planner{ResultCap: 10_000, MinWindow: time.Minute}
	t.Run("the edge split halves a window that came back full", func(t *testing.T) {
		got, err := p.SplitFull(win(sec, sec.Add(time.Hour)))
		want := []Window{win(sec, sec.Add(30*time.Minute)), win(sec.Add(30*time.Minute), sec.Add(time.Hour))}
		if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("SplitFull = %v, %v; want %v", got, err, want)
		}
	})
	t.Run("the edge split of an odd window cuts on a whole millisecond", func(t *testing.T) {
		got, err := p.SplitFull(win(sec, sec.Add(2*time.Minute+3*time.Millisecond)))
		if err != nil || len(got) != 2 || !got[0].End.Equal(sec.Add(time.Minute+time.Millisecond)) {
			t.Fatalf("SplitFull = %v, %v", got, err)
		}
	})
	t.Run("the edge split never goes below MinWindow", func(t *testing.T) {
		w := win(sec, sec.Add(90*time.Second))
		got, err := p.SplitFull(w)
		var tde *TooDenseError
		if !errors.As(err, &tde) || tde.TotalRows != -1 || len(got) != 1 || got[0] != w {
			t.Fatalf("SplitFull = %v, %v; want the window alone and a TooDenseError", got, err)
		}
	})
}

func TestSplitInto(t *testing.T) {
	p := Planner{MinWindow: time.Minute}
	t.Run("a window that cannot be finished as asked is cut into k equal parts that tile it", func(t *testing.T) {
		w := win(sec, sec.Add(4*time.Hour))
		got, err := p.SplitInto(w, 8)
		if err != nil || len(got) != 8 || got[0].Start != w.Start || got[7].End != w.End {
			t.Fatalf("SplitInto = %v, %v", got, err)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Start != got[i-1].End || got[i].Duration() != 30*time.Minute {
				t.Fatalf("part %d: %v after %v", i, got[i], got[i-1])
			}
		}
	})
	t.Run("fewer than two parts are two parts", func(t *testing.T) {
		got, err := p.SplitInto(win(sec, sec.Add(time.Hour)), 1)
		if err != nil || len(got) != 2 {
			t.Fatalf("SplitInto(1) = %v, %v", got, err)
		}
	})
	t.Run("no part is shorter than MinWindow", func(t *testing.T) {
		got, err := p.SplitInto(win(sec, sec.Add(5*time.Minute)), 100)
		if err != nil || len(got) != 5 {
			t.Fatalf("SplitInto = %v, %v; want 5 one-minute parts", got, err)
		}
	})
	t.Run("a window shorter than two MinWindows comes back alone", func(t *testing.T) {
		w := win(sec, sec.Add(90*time.Second))
		got, err := p.SplitInto(w, 4)
		var tde *TooDenseError
		if !errors.As(err, &tde) || len(got) != 1 || got[0] != w {
			t.Fatalf("SplitInto = %v, %v", got, err)
		}
	})
}

func TestDensity(t *testing.T) {
	cases := []struct {
		name string
		prev float64
		rows int64
		dur  time.Duration
		want float64
	}{
		{"an unknown density takes the first observation", 0, 500, 30 * time.Minute, 1000},
		{"a known density moves halfway to the observation", 1000, 3000, time.Hour, 2000},
		{"an empty window halves the density", 1000, 0, time.Hour, 500},
		{"an empty window with no density leaves it unknown", 0, 0, time.Hour, 0},
		{"a window of no duration leaves the density", 1000, 50, 0, 1000},
		{"a negative row count leaves the density", 1000, -1, time.Hour, 1000},
		{"a density that is not a number counts as unknown", math.NaN(), 100, time.Hour, 100},
		{"a negative density counts as unknown", -5, 100, time.Hour, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Density(tc.prev, tc.rows, tc.dur); got != tc.want {
				t.Fatalf("Density(%v, %d, %s) = %v, want %v", tc.prev, tc.rows, tc.dur, got, tc.want)
			}
		})
	}
}

func TestRemaining(t *testing.T) {
	p := Planner{Lag: 30 * time.Minute, TargetRows: 250_000}
	limit := sec.Add(-30 * time.Minute)
	cases := []struct {
		name      string
		p         Planner
		watermark time.Time
		density   float64
		want      Backlog
	}{
		{"a stream that caught up has nothing left", p, limit, 1000,
			Backlog{Span: 7 * day}},
		{"an unknown density counts 7-day windows and one request each", p, limit.Add(-20 * day), 0,
			Backlog{Windows: 3, Requests: 3, Span: 7 * day, Behind: 20 * day}},
		{"a known density estimates rows and a request per page", p, limit.Add(-10 * day), 10_000,
			Backlog{Windows: 10, Rows: 2_400_000, RowsKnown: true, Requests: 480, Span: 25 * time.Hour, Behind: 10 * day}},
		{"a sparse stream needs a request per window", p, limit.Add(-14 * day), 10,
			Backlog{Windows: 2, Rows: 3360, RowsKnown: true, Requests: 2, Span: 7 * day, Behind: 14 * day}},
		{"overlap makes more windows", Planner{Lag: 30 * time.Minute, Overlap: day}, limit.Add(-12 * day), 0,
			Backlog{Windows: 2, Requests: 2, Span: 7 * day, Behind: 12 * day}},
		{"time older than max history is unreachable, not behind", p, sec.Add(-100 * day), 0,
			Backlog{Windows: 14, Requests: 14, Span: 7 * day,
				Behind:      92*day - 15*time.Minute - 30*time.Minute - time.Second,
				Unreachable: 8*day + 15*time.Minute + time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Remaining(tc.watermark, now, tc.density); got != tc.want {
				t.Fatalf("Remaining = %+v\nwant        %+v", got, tc.want)
			}
		})
	}
}

func TestETA(t *testing.T) {
	p := Planner{}
	cases := []struct {
		name       string
		rows, reqs int64
		rate       float64
		want       time.Duration
		wantOK     bool
	}{
		{"requests at the full rate take their share of an hour", 0, 480, 480, time.Hour, true},
		{"rows count one request per page", 5_000_000, 10, 500, 2 * time.Hour, true},
		{"windows count when pages are fewer", 1_000, 120, 240, 30 * time.Minute, true},
		{"nothing left takes no time", 0, 0, 480, 0, true},
		{"no rate gives no estimate", 100, 1, 0, 0, false},
		{"a rate that is not a number gives no estimate", 100, 1, math.NaN(), 0, false},
		{"an absurd backlog is capped, not overflowed", math.MaxInt64, 0, 1e-9, time.Duration(math.MaxInt64), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := p.ETA(tc.rows, tc.reqs, tc.rate)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("ETA(%d, %d, %v) = %s, %v; want %s, %v", tc.rows, tc.reqs, tc.rate, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		p    Planner
		want []string // substrings; none means valid
	}{
		{"the zero planner is valid", Planner{}, nil},
		{"the default planner is valid", DefaultPlanner(), nil},
		{"the brief's planner is valid", Planner{MaxWindow: 7 * day, Lag: 30 * time.Minute, MaxHistory: 92 * day, TargetRows: 250_000, ResultCap: 500_000, MinWindow: time.Minute}, nil},
		{"a MaxWindow over 7 days is valid and capped", Planner{MaxWindow: 30 * day}, nil},
		{"negative values are named by key", Planner{Lag: -time.Second, TargetRows: -1}, []string{"lag: must not be negative", "target_rows: must not be negative"}},
		{"an overlap that leaves no new time is refused", Planner{MaxWindow: time.Hour, Overlap: time.Hour}, []string{"overlap:"}},
		{"a target over the cap is refused", Planner{TargetRows: 600_000}, []string{"target_rows: 600000 is over result_cap 500000"}},
		{"a MinWindow longer than MaxWindow is refused", Planner{MaxWindow: time.Hour, MinWindow: 2 * time.Hour}, []string{"min_window:"}},
		{"a MinWindow under a millisecond is refused", Planner{MinWindow: time.Microsecond}, []string{"min_window: must be at least 1ms"}},
		{"a max history shorter than lag and margin is refused", Planner{Lag: 2 * time.Hour, MaxHistory: time.Hour}, []string{"max_history:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate = nil, want an error")
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Fatalf("Validate = %q, want it to say %q", err, s)
				}
			}
		})
	}
}

func TestDefaultPlannerSpellsOutTheDefaults(t *testing.T) {
	want := Planner{
		MaxWindow: 7 * day, Lag: 30 * time.Minute, MaxHistory: 92 * day, HistoryMargin: 15 * time.Minute,
		TargetRows: 250_000, ResultCap: 500_000, MinWindow: time.Minute, PageRows: 5_000,
	}
	if got := DefaultPlanner(); got != want {
		t.Fatalf("DefaultPlanner = %+v, want %+v", got, want)
	}
}
