package recheck

import (
	"math"
	"slices"
	"time"

	"github.com/svcexport/collector/internal/cursor"
)

// Learnt recheck points (sources.*.recheck: auto). The platform's delays
// differ by source, account and hour, and a user cannot know them; the
// late records the stream finds can. A stream with Config.Auto keeps its
// cursor.Delays (ObserveFresh, ObserveLate: every late record tells how
// long after its record time it was found), shares them with the other
// streams of its source (Pool: a source's delays are mostly the
// platform's), and asks Config.Learnt for the points of each step:
//
//   - a dense phase: the windows that ended less than Dense ago. Every
//     fresh poll asks it again with the new window, as far back as the
//     poll's first page holds (Plan.Recover: the once filter leaves out
//     what was delivered, so a record late by less than that arrives with
//     the next poll at no extra request); the windows of it no poll
//     re-covered (a dense phase of more than a page) are counted again at
//     every sweep, once per Cadence (one count request covers the run of
//     them). Dense is the tail of the delays learnt
//     (the 99th percentile of the late records' delays, pooled over the
//     source's streams, or the stream's own when it learnt a longer one)
//     plus one cadence. Before anything was learnt it is a prior of 5
//     minutes, which fades as late records come: with n of them it
//     is at least (1 - n/20) of the prior.
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
	// autoPrior is the dense phase's reach before anything was learnt.
	autoPrior = 5 * time.Minute
	// autoMinLate is how many (decayed) late records make the prior fade
	// away (fadingTail), and how many a stream's own view needs to count
	// beside its source's (Tail).
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
// false while d holds fewer than 20 late records: a stream's own view,
// which counts beside its source's only once it learnt that much.
func Tail(d cursor.Delays, q float64) (time.Duration, bool) {
	total := lateTotal(d)
	if total < autoMinLate {
		return 0, false
	}
	return quantile(d, q, total), true
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

// Learnt returns the plan of a step of a stream that learnt own, in a
// source whose streams learnt pool together (own among them; the zero
// Delays when the stream learns alone), which sweeps every cadence (see
// the comment at the top of the file); the plan of the configured points
// (Plan) when c is not Auto. The sweep is off: the caller sets Sweep for
// a step that sweeps. c itself is left as configured: the horizon and
// every other setting stay what they are, whatever is learnt.
func (c Config) Learnt(own, pool cursor.Delays, cadence time.Duration) Plan {
	if !c.Auto {
		return c.Plan()
	}
	cadence = max(cadence, time.Second)
	if pool.Empty() {
		pool = own
	}
	tail := fadingTail(pool)
	if t, ok := Tail(own, autoQuantile); ok && t > tail {
		// Where a stream differs from its source (an account behind a
		// slower part of the platform), its own view covers it.
		tail = t
	}
	dense := min(tail+cadence, autoMaxDense)
	return Plan{Points: autoOffsets(dense), Dense: dense, Cadence: cadence, cfg: c}
}

// fadingTail is the dense phase's tail of d: the 99th percentile of its
// late records from the first one on, never less than what is left of
// the prior ((1 - n/20) of it for n late records), and the prior itself
// while d knows no late record. A hard switch after 20 records left a
// quiet stream on the prior for hours (issue 31); a prior that fades
// lets the first records move the tail out at once, and a tail shorter
// than the prior takes over as records confirm it.
func fadingTail(d cursor.Delays) time.Duration {
	n := lateTotal(d)
	if n <= 0 {
		return autoPrior
	}
	floor := time.Duration(float64(autoPrior) * max(0, 1-n/autoMinLate))
	return max(quantile(d, autoQuantile, n), floor)
}

// quantile is the upper bound of the bucket under which a share q of
// d's n late records lie (24h for the last bucket).
func quantile(d cursor.Delays, q, n float64) time.Duration {
	var run float64
	for i, x := range d.Late {
		run += x
		if run >= q*n-1e-9 {
			if i < len(cursor.DelayBounds) {
				return cursor.DelayBounds[i]
			}
			break
		}
	}
	return cursor.DelayBounds[len(cursor.DelayBounds)-1]
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
// set, w ended less than Dense ago, and it was last asked at least a
// cadence ago or before the latest poll that re-covered the late phase
// (Polled), which left it out. A window just fetched, or asked again by
// that poll (Recover), has nothing new to show.
func (p Plan) sweeps(w cursor.LoggedWindow, now time.Time) bool {
	asked := w.Checked()
	if w.FetchedAt.After(asked) {
		asked = w.FetchedAt
	}
	return p.Sweep && now.Sub(w.End) < p.Dense && (now.Sub(asked) >= p.Cadence || asked.Before(p.Polled))
}
