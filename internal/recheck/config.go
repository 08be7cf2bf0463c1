package recheck

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Defaults of Config.
const (
	// DefaultShare is the most of a functionality's budget rechecks spend.
	DefaultShare = 0.10
	// DefaultRefetchRows is two full pages (C3: at most 5,000 rows a
	// page): fetching a range this small costs at most two requests, and
	// narrowing it at least as much (one count, then at least one page).
	DefaultRefetchRows = 10_000
	// DefaultMaxRequests caps the count requests of one unit's narrowing.
	DefaultMaxRequests = 32
	// DefaultMaxSpan is the longest run of windows counted by one request.
	DefaultMaxSpan = 24 * time.Hour
	// DefaultEdgeMaxRows is the edge API's max_rows (C6).
	DefaultEdgeMaxRows = 10000
	// maxSpanLimit is the longest window the core API accepts (C3).
	maxSpanLimit = 7 * 24 * time.Hour
)

// DefaultOffsets are the fixed recheck points of earlier versions (the
// default before points were learnt): 1h, 6h, 24h.
func DefaultOffsets() []time.Duration {
	return []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour}
}

// Config is what sources.*.recheck* configure (Validate checks it): when
// and how much to recheck. What a stream learns at run time is not here
// but in the Plan of each step (Learnt, Plan), so that nothing learnt
// moves a setting. Build it with DefaultConfig; the zero value has no
// recheck points and rechecks nothing.
type Config struct {
	// Offsets are the configured recheck points: a window is asked again
	// at each Offset after its end, in order (sources.*.recheck).
	// Ascending and positive. Default 1h, 6h, 24h. Empty turns rechecks
	// off. With Auto, the points of the prior (before anything was
	// learnt, DefaultConfig): Learnt computes those in force.
	Offsets []time.Duration
	// Horizon is how long after its end a window stays in the log; a
	// window not rechecked by then (the budget was short) expires. After
	// the last offset: a window leaving the log at its last point would
	// never be asked at it. Default 0: the last offset plus 1h. Only this
	// setting ends a window's points, never a learnt schedule (see Plan).
	Horizon time.Duration
	// Share is the most of each functionality's budget that rechecks may
	// spend over the budget's period, in (0, 1]. Default 0.10.
	Share float64
	// RefetchRows: a changed range with at most this many rows is fetched
	// again whole instead of narrowed. Default 10000 (two pages).
	RefetchRows int64
	// MaxRequests caps the count requests one unit's narrowing makes, its
	// first included; past it, ranges still changed are fetched whole.
	// Default 32.
	MaxRequests int
	// MaxSpan is the longest run of adjacent windows merged into one unit
	// (one count request); at most 7 days (C3). Default 24h.
	MaxSpan time.Duration
	// EdgeMaxRows is the edge API's max_rows (C6): adjacent edge windows
	// merge into one request while their stored rows stay at most half of
	// it, so that the answer is not cut. Default 10000.
	EdgeMaxRows int64
	// Auto: the points are learnt from the platform's delays
	// (sources.*.recheck: auto, the default; see Learnt).
	Auto bool
}

// DefaultConfig returns the defaults: points learnt (Auto), before
// anything was learnt.
func DefaultConfig() Config {
	return Config{
		Auto:        true,
		Offsets:     autoOffsets(autoPrior),
		Share:       DefaultShare,
		RefetchRows: DefaultRefetchRows,
		MaxRequests: DefaultMaxRequests,
		MaxSpan:     DefaultMaxSpan,
		EdgeMaxRows: DefaultEdgeMaxRows,
	}
}

// HorizonOrDefault is Horizon, or the last configured offset plus 1h when
// Horizon is 0 (0 when there are no offsets). A setting, never learnt: a
// stored due time always lies before it (Plan).
func (c Config) HorizonOrDefault() time.Duration {
	switch {
	case c.Horizon > 0:
		return c.Horizon
	case len(c.Offsets) == 0:
		return 0
	}
	return c.Offsets[len(c.Offsets)-1] + time.Hour
}

// Validate reports every invalid field as "key: message", the keys named
// as a sources block would name them (recheck, recheck_horizon, ...); the
// caller prefixes the block ("sources.dns.").
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	for i, o := range c.Offsets {
		if o <= 0 {
			bad("recheck", "point %d is %v, want a positive duration", i+1, o)
		}
		if i > 0 && o <= c.Offsets[i-1] {
			bad("recheck", "points must ascend: %v after %v", o, c.Offsets[i-1])
		}
	}
	if c.Horizon < 0 {
		bad("recheck_horizon", "%v, want 0 (the default) or more", c.Horizon)
	} else if n := len(c.Offsets); n > 0 && c.Horizon > 0 && c.Horizon <= c.Offsets[n-1] {
		bad("recheck_horizon", "%v is not after the last recheck point %v: a window would leave the log before it is asked at its last point", c.Horizon, c.Offsets[n-1])
	}
	if math.IsNaN(c.Share) || c.Share <= 0 || c.Share > 1 {
		bad("recheck_share", "%v, want a share in (0, 1]", c.Share)
	}
	if c.RefetchRows < 0 {
		bad("recheck_refetch_rows", "%d, want 0 or more", c.RefetchRows)
	}
	if c.MaxRequests < 1 {
		bad("recheck_max_requests", "%d, want 1 or more", c.MaxRequests)
	}
	if c.MaxSpan <= 0 || c.MaxSpan > maxSpanLimit {
		bad("recheck_max_span", "%v, want more than 0 and at most 7 days (C3)", c.MaxSpan)
	}
	if c.EdgeMaxRows < 2 {
		bad("edge.max_rows", "%d, want 2 or more", c.EdgeMaxRows)
	}
	return errors.Join(errs...)
}

// Enabled reports whether c has recheck points.
func (c Config) Enabled() bool { return len(c.Offsets) > 0 || c.Auto }

// Last is the last configured recheck point, 0 when there is none (with
// Auto: the prior's, which every learnt schedule keeps).
func (c Config) Last() time.Duration {
	if len(c.Offsets) == 0 {
		return 0
	}
	return c.Offsets[len(c.Offsets)-1]
}

// PruneBefore is the cut of the log at now: windows ending at or before it
// are past the horizon and leave the log
// (cursor.WindowChanges.PruneBefore). It reads the settings only: a
// learnt schedule never moves it.
func (c Config) PruneBefore(now time.Time) time.Time { return now.Add(-c.HorizonOrDefault()) }

// Plan is the plan of the configured points: the one in force for fixed
// points, and for Auto the prior's before anything was learnt (Learnt
// computes the plan of each step).
func (c Config) Plan() Plan {
	return Plan{Points: slices.Clone(c.Offsets), cfg: c}
}
