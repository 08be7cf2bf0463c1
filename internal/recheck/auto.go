package recheck

import (
	"math"
	"slices"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// Learnt recheck points (sources.*.recheck: auto). The platform's delays
// differ by source, account and hour, and a user cannot know them; the
// rechecks that find growth can. A stream with Config.Auto keeps its
// cursor.Delays (ObserveFresh, ObserveLate: every recovered record tells
// how long after its record time it was found) and asks Config.Learnt
// for the points of each step:
//
//   - a dense phase: every window that ended less than Dense ago is counted
//     again at every sweep, once per Cadence (one count request covers the
//     run of them, and while they hold at most two pages its first page is
//     the refetch). Dense is the tail of the delays learnt (the 99th
//     percentile of the recovered records' delays) plus one cadence, so
//     that a record late by less than the tail is fetched at most about a
//     cadence after it became visible. Before 20 late records were seen it
//     is a prior of 5 minutes.
//   - sparse points after it, doubling from twice Dense up to an hour,
//     then 1h, 6h and 24h: for the tail the platform has not shown yet.
//     A record found at one of them is observed as late as the point, so
//     a platform whose delays grow moves Dense out within about one such
//     point (twice the new delay at most), and its next records are fresh
//     again.
//
// Cadence is what the budget affords (Limiter.Cadence): the stream's part
// of the recheck share, never less than the stream's interval.

const (
	// DelayHalfLife is how fast what was learnt fades: an observation
	// counts half as much this long after it was made.
	DelayHalfLife = 30 * time.Minute
	// autoPrior is the dense phase's reach before enough was learnt.
	autoPrior = 5 * time.Minute
	// autoMinLate is how many (decayed) late records make the learnt
	// tail replace the prior.
	autoMinLate = 20
	// autoQuantile is the share of late records the dense phase covers.
	autoQuantile = 0.99
	// autoMaxDense caps the dense phase: later records are the sparse
	// points' to find.
	autoMaxDense = time.Hour
	// autoDenseShare is the part of a stream's recheck share its sweeps
	// plan to spend; the sparse points and the refetches have the rest.
	autoDenseShare = 0.75
)

// autoLate are the sparse points past an hour.
var autoLate = []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour}

// decay ages the counts of d to now.
func decay(d *cursor.Delays, now time.Time) {
	if d.At.IsZero() || !now.After(d.At) {
		if d.At.IsZero() {
			d.At = now
		}
		return
	}
	f := math.Exp2(-float64(now.Sub(d.At)) / float64(DelayHalfLife))
	d.Fresh *= f
	for i := range d.Late {
		d.Late[i] *= f
	}
	d.At = now
}

// ObserveFresh counts n records that the first fetch of their window held.
func ObserveFresh(d *cursor.Delays, n int, now time.Time) {
	if n <= 0 {
		return
	}
	decay(d, now)
	d.Fresh += float64(n)
}

// ObserveLate counts a record a recheck recovered late after its record
// time (when its page arrived: at most that late, at least the previous
// check of its window).
func ObserveLate(d *cursor.Delays, late time.Duration, now time.Time) {
	decay(d, now)
	if d.Late == nil {
		d.Late = make([]float64, len(cursor.DelayBounds)+1)
	}
	i, _ := slices.BinarySearch(cursor.DelayBounds, late)
	d.Late[min(i, len(d.Late)-1)]++
}

// lateTotal is the (decayed) count of late records of d.
func lateTotal(d cursor.Delays) float64 {
	var n float64
	for _, x := range d.Late {
		n += x
	}
	return n
}

// Tail returns the delay under which a share q of d's late records were
// found (the upper bound of its bucket; 24h and more for the last), and
// false while d holds fewer than 20 late records.
func Tail(d cursor.Delays, q float64) (time.Duration, bool) {
	total := lateTotal(d)
	if total < autoMinLate {
		return 0, false
	}
	var run float64
	for i, x := range d.Late {
		run += x
		if run >= q*total-1e-9 {
			if i < len(cursor.DelayBounds) {
				return cursor.DelayBounds[i], true
			}
			break
		}
	}
	return cursor.DelayBounds[len(cursor.DelayBounds)-1], true
}

// LateShare returns the share of d's records (fresh and late) found more
// than after past their record time: the records a collector that asks
// each window once, after, would miss. 0 when d knows nothing.
func LateShare(d cursor.Delays, after time.Duration) float64 {
	total := d.Fresh + lateTotal(d)
	if total == 0 {
		return 0
	}
	var n float64
	for i, x := range d.Late {
		lo := time.Duration(0)
		if i > 0 {
			lo = cursor.DelayBounds[i-1]
		}
		if lo >= after {
			n += x
		}
	}
	return n / total
}

// Learnt returns c with the points of a stream that learnt d and sweeps
// every cadence (see the comment at the top of the file); c itself when
// it is not Auto. The sweep is off: the caller sets Sweep for a step that
// sweeps.
func (c Config) Learnt(d cursor.Delays, cadence time.Duration) Config {
	if !c.Auto {
		return c
	}
	cadence = max(cadence, time.Second)
	tail, ok := Tail(d, autoQuantile)
	if !ok {
		tail = autoPrior
	}
	c.Dense = min(tail+cadence, autoMaxDense)
	c.Cadence = cadence
	c.Sweep = false
	c.Offsets = autoOffsets(c.Dense)
	return c
}

// autoOffsets are the sparse points after a dense phase of dense.
func autoOffsets(dense time.Duration) []time.Duration {
	var out []time.Duration
	for p := 2 * dense; p < time.Hour; p *= 2 {
		out = append(out, p)
	}
	for _, p := range autoLate {
		if len(out) > 0 && p < out[len(out)-1]*3/2 {
			out[len(out)-1] = p // too close to the next: one point
			continue
		}
		out = append(out, p)
	}
	return out
}

// sweeps reports whether w is counted again by this step's sweep: Sweep is
// set, w ended less than Dense ago and was fetched at least a cadence ago
// (a window just fetched has nothing new to show).
func (c Config) sweeps(w cursor.LoggedWindow, now time.Time) bool {
	return c.Sweep && now.Sub(w.End) < c.Dense && now.Sub(w.FetchedAt) >= c.Cadence
}
