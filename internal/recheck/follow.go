package recheck

import (
	"slices"
	"time"
)

// Following alerts past the lookback (C6: an alert changes after its
// creation, and real alerts stay open for weeks).
//
// The poller re-asks the alerts created in the last alert_update_lookback
// (24h) and emits an alert again when its update_time grew past its mark
// (cursor.AlertMark, kept across restarts). An alert older than the
// lookback is followed for a longer follow period at a bounded cost: every
// follow interval (e.g. 1h) the poller asks the alerts created in
// [now - follow period, now - lookback) in the windows FollowWindows cuts
// from the marks of that period, and treats them as any re-asked alert;
// the marks are pruned at now - follow period instead of now - lookback.
// It asks with the configured status filter, not OPEN,IN_PROGRESS only:
// the windows are sized by all the marks either way, so the requests are
// the same, and only the full filter shows the update that closes an
// alert (a closed alert no longer matches OPEN,IN_PROGRESS). The cost per
// interval is one request per window: at most
// 2*ceil(marks of the period / perWindow) + ceil(period / maxSpan) + 1.
// With 30 alerts an hour, a follow period of 30 days, perWindow 5,000 and
// maxSpan 7 days that is at most 16 requests an interval.

// FollowWindows cuts [from, to) into adjacent windows that each hold at
// most perWindow of creates (the creation times of the alert marks in the
// range; pass at most half of the edge API's max_rows, so that an answer
// is never cut, C6) and span at most maxSpan (at least 1ms; 0: no bound).
// A creation time shared by more than perWindow alerts makes a window of
// one millisecond. creates need not be sorted; it is not changed.
func FollowWindows(creates []time.Time, from, to time.Time, perWindow int, maxSpan time.Duration) [][2]time.Time {
	if !to.After(from) {
		return nil
	}
	perWindow = max(perWindow, 1)
	ts := make([]time.Time, 0, len(creates))
	for _, c := range creates {
		if !c.Before(from) && c.Before(to) {
			ts = append(ts, c)
		}
	}
	slices.SortFunc(ts, time.Time.Compare)
	var out [][2]time.Time
	start, n := from, 0
	cut := func(end time.Time) {
		out = append(out, [2]time.Time{start, end})
		start, n = end, 0
	}
	for i := 0; i < len(ts); {
		// The group of creates at one time c: k of them.
		c, k := ts[i], 0
		for i < len(ts) && ts[i].Equal(c) {
			i++
			k++
		}
		for maxSpan > 0 && c.Sub(start) >= maxSpan {
			cut(start.Add(maxSpan))
		}
		switch {
		case k > perWindow:
			// More than a window's worth at one time: they share a
			// window of one millisecond.
			if c.After(start) {
				cut(c)
			}
			cut(c.Add(time.Millisecond))
			continue
		case n+k > perWindow:
			cut(c)
		}
		n += k
	}
	for maxSpan > 0 && to.Sub(start) > maxSpan {
		cut(start.Add(maxSpan))
	}
	if to.After(start) {
		cut(to)
	}
	return out
}
