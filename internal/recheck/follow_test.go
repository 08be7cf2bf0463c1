package recheck

import (
	"math/rand/v2"
	"testing"
	"time"
)

// C6: the windows in which open alerts are followed past the lookback
// tile the period, never hold more alerts than an answer can (unless they
// share one millisecond), and never span more than maxSpan.
func TestC6FollowWindowsTileThePeriodWithinTheRowAndSpanBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	from := t0
	for round := range 2000 {
		period := time.Duration(1+rng.IntN(30*24)) * time.Hour
		to := from.Add(period)
		var creates []time.Time
		for range rng.IntN(400) {
			c := from.Add(time.Duration(rng.Int64N(int64(period)+2*int64(time.Hour))) - time.Hour) // some outside
			if rng.IntN(10) == 0 && len(creates) > 0 {
				c = creates[rng.IntN(len(creates))] // several alerts created in one millisecond
			}
			creates = append(creates, c.Truncate(time.Millisecond))
		}
		per := 1 + rng.IntN(50)
		var span time.Duration
		if rng.IntN(2) == 0 {
			span = time.Duration(1+rng.IntN(72)) * time.Hour
		}
		ws := FollowWindows(creates, from, to, per, span)
		if len(ws) == 0 || !ws[0][0].Equal(from) || !ws[len(ws)-1][1].Equal(to) {
			t.Fatalf("round %d: windows %v do not cover [%v, %v)", round, ws, from, to)
		}
		inside := 0
		for i, w := range ws {
			if !w[1].After(w[0]) || (i > 0 && !w[0].Equal(ws[i-1][1])) {
				t.Fatalf("round %d: windows do not tile: %v", round, ws)
			}
			if span > 0 && w[1].Sub(w[0]) > span {
				t.Fatalf("round %d: window %v spans over %v", round, w, span)
			}
			n := 0
			for _, c := range creates {
				if !c.Before(w[0]) && c.Before(w[1]) {
					n++
				}
			}
			inside += n
			if n > per && w[1].Sub(w[0]) > time.Millisecond {
				t.Fatalf("round %d: window %v holds %d creates, the bound is %d", round, w, n, per)
			}
		}
		want := 0
		for _, c := range creates {
			if !c.Before(from) && c.Before(to) {
				want++
			}
		}
		if inside != want {
			t.Fatalf("round %d: windows hold %d creates, the period %d", round, inside, want)
		}
		spanCuts := 0
		if span > 0 {
			spanCuts = int((period + span - 1) / span)
		}
		if bound := 2*((want+per-1)/per) + spanCuts + 1; len(ws) > bound {
			t.Fatalf("round %d: %d windows for %d creates of at most %d a window, bound %d", round, len(ws), want, per, bound)
		}
	}
	if ws := FollowWindows(nil, t0, t0, 10, 0); ws != nil {
		t.Fatalf("an empty period: %v", ws)
	}
}
