package window

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of the Planner's fields, from the contract where it names a value.
const (
	// APIMaxWindow is the longest window the API accepts (C3: over 7 days
	// is a 400). No window is ever longer, whatever MaxWindow says.
	APIMaxWindow = 7 * 24 * time.Hour
	// DefaultMaxHistory is how far back searches reach (C3 max_history).
	DefaultMaxHistory = 92 * 24 * time.Hour
	// DefaultHistoryMargin keeps windows this far inside max history. It
	// covers clock skew and the time between planning a window and sending
	// it (waiting for a rate-limit token, C4), so the API's 92-day check
	// never fires.
	DefaultHistoryMargin = 15 * time.Minute
	// DefaultResultCap is the most rows one result set yields (C3: the
	// chain stops after 500,000 rows).
	DefaultResultCap int64 = 500_000
	// DefaultPageRows is the most rows of one page (C3).
	DefaultPageRows int64 = 5_000
	// DefaultMinWindow is the smallest window planned or split.
	DefaultMinWindow = time.Minute
	// DefaultLag is the lag of DefaultPlanner: data arrives late (C3), and a
	// window asked too early misses it for good.
	DefaultLag = 30 * time.Minute
	// MaxSplitParts bounds the parts of one split; a part still too large
	// is split again when its own first page says so.
	MaxSplitParts = 1024
	// DensityWeight is the weight of the newest observation in Density's
	// moving average.
	DensityWeight = 0.5
)

// ErrTooDense is wrapped by the error of a split that cannot go below
// MinWindow: the window holds more rows than one result set can yield, and
// the rows past the cap cannot be fetched. The caller logs it loudly.
var ErrTooDense = errors.New("window too dense to split further")

// TooDenseError says which window could not be split. It wraps ErrTooDense.
type TooDenseError struct {
	// Window is the window returned unsplit.
	Window Window
	// TotalRows is the row count the API reported, -1 when it reported none
	// (an edge window that came back full, C6).
	TotalRows int64
	// MinWindow is the planner's MinWindow.
	MinWindow time.Duration
}

func (e *TooDenseError) Error() string {
	rows := "a full response"
	if e.TotalRows >= 0 {
		rows = fmt.Sprintf("%d rows", e.TotalRows)
	}
	return fmt.Sprintf("window %s holds %s and cannot be split below the minimum window %s: %v", e.Window, rows, e.MinWindow, ErrTooDense)
}

// Unwrap returns ErrTooDense.
func (e *TooDenseError) Unwrap() error { return ErrTooDense }

// Planner cuts the time of one stream into windows (DESIGN item 1, CONTRACT
// C3). It is a value: pure, no I/O, the clock and the observed density are
// arguments, safe for concurrent use.
//
// The zero Planner is usable: every field left zero (or negative) takes the
// default its comment names, except Lag and Overlap whose zero means none.
// Validate reports values the methods would have to correct.
type Planner struct {
	// MaxWindow is the longest window. Default and upper bound APIMaxWindow
	// (7 days): a larger value is treated as 7 days.
	MaxWindow time.Duration `koanf:"max_window"`
	// Lag keeps the newest window's end at now - Lag, so that late data
	// (C3) and clock skew with the service are inside the lag when a window
	// is asked. Zero means no lag; DefaultPlanner uses DefaultLag (30m).
	Lag time.Duration `koanf:"lag"`
	// Overlap re-asks this much time before the watermark in every window,
	// for data later than Lag (duplicates are removed downstream by id,
	// C7). Zero means none. It is bounded by MaxWindow - MinWindow, so that
	// every window moves past the watermark.
	Overlap time.Duration `koanf:"overlap"`
	// MaxHistory is how far back the API searches (C3). Default
	// DefaultMaxHistory (92 days).
	MaxHistory time.Duration `koanf:"max_history"`
	// HistoryMargin keeps every window this far inside MaxHistory. Default
	// DefaultHistoryMargin (15m).
	HistoryMargin time.Duration `koanf:"history_margin"`
	// TargetRows is how many rows a window is sized for when the density
	// is known, and the size of split parts. Default ResultCap / 2.
	TargetRows int64 `koanf:"target_rows"`
	// ResultCap is the row count from which a result set may be truncated
	// (C3). Default DefaultResultCap (500,000). For the edge API, use its
	// max_rows (C6).
	ResultCap int64 `koanf:"result_cap"`
	// MinWindow is the smallest window planned or split; it is rounded up to
	// whole milliseconds. Default DefaultMinWindow (1m).
	MinWindow time.Duration `koanf:"min_window"`
	// PageRows is the most rows of one page, for request estimates.
	// Default DefaultPageRows (5,000).
	PageRows int64 `koanf:"page_rows"`
}

// DefaultPlanner returns a Planner with every default spelled out and Lag
// set to DefaultLag.
func DefaultPlanner() Planner {
	p := Planner{Lag: DefaultLag}.withDefaults()
	return p
}

// Validate reports, by configuration key, the values the methods would
// correct or that make planning impossible, joined with errors.Join.
func (p Planner) Validate() error {
	var errs []error
	for _, f := range []struct {
		key string
		d   time.Duration
	}{
		{"max_window", p.MaxWindow}, {"lag", p.Lag}, {"overlap", p.Overlap},
		{"max_history", p.MaxHistory}, {"history_margin", p.HistoryMargin}, {"min_window", p.MinWindow},
	} {
		if f.d < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %s", f.key, f.d))
		}
	}
	for _, f := range []struct {
		key string
		n   int64
	}{{"target_rows", p.TargetRows}, {"result_cap", p.ResultCap}, {"page_rows", p.PageRows}} {
		if f.n < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %d", f.key, f.n))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	e := p.withDefaults()
	if p.MinWindow > 0 && p.MinWindow < time.Millisecond {
		errs = append(errs, fmt.Errorf("min_window: must be at least 1ms, got %s", p.MinWindow))
	}
	if p.MinWindow > e.MaxWindow {
		errs = append(errs, fmt.Errorf("min_window: %s is longer than max_window %s", p.MinWindow, e.MaxWindow))
	}
	if p.Overlap > e.MaxWindow-e.minAdvance() {
		errs = append(errs, fmt.Errorf("overlap: %s leaves windows of %s less than min_window %s of new time", p.Overlap, e.MaxWindow, e.minAdvance()))
	}
	if p.TargetRows > e.ResultCap {
		errs = append(errs, fmt.Errorf("target_rows: %d is over result_cap %d", p.TargetRows, e.ResultCap))
	}
	if e.Lag+e.HistoryMargin+e.minAdvance() > e.MaxHistory {
		errs = append(errs, fmt.Errorf("max_history: %s leaves no time after lag %s and history_margin %s", e.MaxHistory, e.Lag, e.HistoryMargin))
	}
	return errors.Join(errs...)
}

// withDefaults returns p with defaults in place of zero values and values
// clamped into their working range.
func (p Planner) withDefaults() Planner {
	if p.MaxWindow <= 0 || p.MaxWindow > APIMaxWindow {
		p.MaxWindow = APIMaxWindow
	}
	if p.MaxHistory <= 0 {
		p.MaxHistory = DefaultMaxHistory
	}
	if p.HistoryMargin <= 0 {
		p.HistoryMargin = DefaultHistoryMargin
	}
	if p.ResultCap <= 0 {
		p.ResultCap = DefaultResultCap
	}
	if p.TargetRows <= 0 {
		p.TargetRows = max(p.ResultCap/2, 1)
	}
	if p.PageRows <= 0 {
		p.PageRows = DefaultPageRows
	}
	if p.MinWindow <= 0 {
		p.MinWindow = DefaultMinWindow
	}
	p.MinWindow = ceilDur(p.MinWindow, time.Millisecond)
	p.MinWindow = min(p.MinWindow, p.MaxWindow)
	p.Lag = max(p.Lag, 0)
	p.Overlap = min(max(p.Overlap, 0), p.MaxWindow-p.minAdvance())
	return p
}

// minAdvance is the least new time a window covers: MinWindow, and at least
// one second because window ends are whole seconds.
func (p Planner) minAdvance() time.Duration {
	return max(p.MinWindow, time.Second)
}

// Floor returns the earliest instant a window may start at now: now -
// MaxHistory + HistoryMargin, rounded up to a whole second.
func (p Planner) Floor(now time.Time) time.Time {
	p = p.withDefaults()
	return ceilTime(now.Add(-p.MaxHistory+p.HistoryMargin), time.Second)
}

// Limit returns the latest instant a window may end at now: now - Lag,
// rounded down to a whole second.
func (p Planner) Limit(now time.Time) time.Time {
	p = p.withDefaults()
	return now.Add(-p.Lag).Truncate(time.Second)
}

// Next returns the window to ask after watermark at now, and false when
// there is none yet (now - Lag is not after the watermark). Backfill and
// tailing are the same call: the window starts at watermark - Overlap (on a
// whole millisecond, never later than that), never before Floor(now), and
// ends on a whole second, at most Limit(now) and at most MaxWindow (7 days)
// after its start. With Overlap zero, the next window starts exactly where
// the previous one ended.
//
// density is the stream's observed rows per hour (see Density); 0 means
// unknown. When it is known the window is sized for about TargetRows rows,
// within [MinWindow, MaxWindow]; when unknown it is MaxWindow long, and the
// first page's totalRows tells whether to Split it.
//
// A zero watermark starts at Floor(now). Time between the watermark and
// Floor(now) is never asked: see Unreachable.
func (p Planner) Next(watermark, now time.Time, density float64) (Window, bool) {
	p = p.withDefaults()
	limit := p.Limit(now)
	if !limit.After(watermark) {
		return Window{}, false
	}
	// Truncating down re-asks less than a millisecond: never loses one.
	start := watermark.Add(-p.Overlap).Truncate(time.Millisecond)
	if floor := p.Floor(now); start.Before(floor) {
		start = floor
	}
	fresh := start // the first instant not yet asked
	if watermark.After(fresh) {
		fresh = watermark
	}

	end := start.Add(p.span(density)).Truncate(time.Second)
	// Every window moves past the watermark, even when a dense stream's
	// span is shorter than the overlap.
	if !end.After(fresh) {
		end = fresh.Add(p.MinWindow).Truncate(time.Second)
	}
	if !end.After(fresh) {
		end = fresh.Truncate(time.Second).Add(time.Second)
	}
	if end.Sub(start) > p.MaxWindow {
		end = start.Add(p.MaxWindow).Truncate(time.Second)
	}
	if end.After(limit) {
		end = limit
	}
	if !end.After(fresh) {
		return Window{}, false // Floor is past Limit: an invalid planner
	}
	return Window{Start: start, End: end}, true
}

// Ready returns the earliest clock time at which Next returns a window for
// watermark. A poller that caught up sleeps until then (or its poll
// interval, whichever is later) instead of asking in a loop.
func (p Planner) Ready(watermark time.Time) time.Time {
	p = p.withDefaults()
	return watermark.Truncate(time.Second).Add(time.Second + p.Lag)
}

// Unreachable returns the time between watermark and Floor(now) that Next
// will never ask because the API no longer serves it (C3 max_history), and
// false when there is none. Records in it are lost: the caller logs and
// counts it.
func (p Planner) Unreachable(watermark, now time.Time) (Window, bool) {
	floor := p.Floor(now)
	if !watermark.Before(floor) {
		return Window{}, false
	}
	return Window{Start: watermark, End: floor}, true
}

// Clamp trims the start of a window planned earlier (a window in flight
// after a restart, or asked again after its next-page URL expired) to
// Floor(now), so that asking it again is not refused for its age. It
// returns false when nothing of w is still reachable.
func (p Planner) Clamp(w Window, now time.Time) (Window, bool) {
	floor := p.Floor(now)
	if w.Start.Before(floor) {
		w.Start = floor
	}
	return w, !w.Empty()
}

// span returns the length of a window for density rows per hour.
func (p Planner) span(density float64) time.Duration {
	switch {
	case math.IsInf(density, 1):
		return p.MinWindow
	case !(density > 0): // 0, negative or NaN: unknown
		return p.MaxWindow
	}
	hours := float64(p.TargetRows) / density
	if hours >= p.MaxWindow.Hours() {
		return p.MaxWindow
	}
	return min(max(time.Duration(hours*float64(time.Hour)), p.MinWindow), p.MaxWindow)
}

// Split cuts w when its first page reported totalRows at or over ResultCap
// (C3: the chain stops at the cap, and the service may cap the count, so at
// the cap means maybe truncated). It returns nil when no split is needed.
//
// Otherwise it returns k = ceil(totalRows / TargetRows) contiguous parts (at
// least 2, at most MaxSplitParts), in order, tiling w exactly. Parts are
// equal and their inner bounds are on whole milliseconds when w.Start is;
// the last part takes the remainder. No part is shorter than MinWindow, so k
// is smaller when w is short; a part may still be too dense and is split
// again when its own first page says so. When w cannot be cut into two
// parts of MinWindow, Split returns w alone and a *TooDenseError.
func (p Planner) Split(w Window, totalRows int64) ([]Window, error) {
	p = p.withDefaults()
	if totalRows < p.ResultCap {
		return nil, nil
	}
	k := max(ceilDiv(totalRows, p.TargetRows), 2)
	return p.cut(w, k, totalRows)
}

// SplitFull halves w, a window whose edge response came back with max_rows
// rows (C6: edge responses have no paging and drop the rest silently, so a
// full response is taken as truncated). The halves follow Split's rules;
// a window shorter than two MinWindows comes back alone with a
// *TooDenseError.
func (p Planner) SplitFull(w Window) ([]Window, error) {
	return p.withDefaults().cut(w, 2, -1)
}

// SplitInto cuts w into k contiguous parts (k at least 2, at most
// MaxSplitParts) by Split's rules: equal parts tiling w, none shorter than
// MinWindow, so fewer when w is short. It is for windows that cannot be
// finished as asked, whatever their first page said: a chain cut at the
// page cap, a chain whose next-page URL expired before its walk could end.
// A window shorter than two MinWindows comes back alone with a
// *TooDenseError (TotalRows -1).
func (p Planner) SplitInto(w Window, k int64) ([]Window, error) {
	return p.withDefaults().cut(w, max(k, 2), -1)
}

func (p Planner) cut(w Window, k, totalRows int64) ([]Window, error) {
	dur := w.Duration()
	k = min(k, MaxSplitParts, int64(max(dur, 0)/p.MinWindow))
	if k < 2 {
		return []Window{w}, &TooDenseError{Window: w, TotalRows: totalRows, MinWindow: p.MinWindow}
	}
	// MinWindow is whole milliseconds and dur/k >= MinWindow, so the
	// truncated step is still at least MinWindow.
	step := (dur / time.Duration(k)).Truncate(time.Millisecond)
	parts := make([]Window, k)
	for i := range parts {
		parts[i] = Window{Start: w.Start.Add(time.Duration(i) * step), End: w.Start.Add(time.Duration(i+1) * step)}
	}
	parts[k-1].End = w.End
	return parts, nil
}

// Density returns the stream's rows per hour after a window of dur that
// held rows: a moving average weighting the new observation by
// DensityWeight, so one burst moves it halfway. rows is the window's true
// size (totalRows of its first page when the API reports one, C3). A prev
// of 0 (or negative, or not a number) means unknown: the observation is
// taken as it is. A dur that is not positive leaves prev unchanged.
func Density(prev float64, rows int64, dur time.Duration) float64 {
	if math.IsNaN(prev) || math.IsInf(prev, 0) || prev < 0 {
		prev = 0
	}
	if dur <= 0 || rows < 0 {
		return prev
	}
	obs := float64(rows) / dur.Hours()
	if prev == 0 {
		return obs
	}
	return prev + DensityWeight*(obs-prev)
}

// Backlog estimates what is left between a watermark and now - Lag, for the
// state command, logs and metrics.
type Backlog struct {
	// Windows is how many windows Next will plan at the current density.
	Windows int64
	// Rows estimates the rows left; 0 when RowsKnown is false.
	Rows int64
	// RowsKnown is false when the density is unknown.
	RowsKnown bool
	// Requests estimates the requests left, first pages and next pages:
	// at least one a window and one a PageRows rows.
	Requests int64
	// Span is the window length used for the estimate.
	Span time.Duration
	// Behind is the time left to fetch, from the watermark (or Floor) to
	// Limit(now).
	Behind time.Duration
	// Unreachable is the time before Floor(now) that will never be asked.
	Unreachable time.Duration
}

// Remaining estimates the backlog of a stream at watermark, now and
// density (rows per hour, 0 = unknown). A stream that caught up has a zero
// Backlog but for Span.
func (p Planner) Remaining(watermark, now time.Time, density float64) Backlog {
	p = p.withDefaults()
	b := Backlog{Span: p.span(density)}
	from := watermark
	if u, ok := p.Unreachable(watermark, now); ok {
		b.Unreachable = u.Duration()
		from = u.End
	}
	limit := p.Limit(now)
	if !limit.After(from) {
		return b
	}
	b.Behind = limit.Sub(from)
	advance := max(b.Span-p.Overlap, p.minAdvance())
	b.Windows = ceilDiv(int64(b.Behind), int64(advance))
	if density > 0 && !math.IsInf(density, 0) {
		b.RowsKnown = true
		b.Rows = int64(math.Round(density * b.Behind.Hours()))
	}
	b.Requests = max(b.Windows, ceilDiv(b.Rows, p.PageRows))
	return b
}

// ETA estimates how long fetching takes: max(requestsLeft, rowsLeft /
// PageRows) requests spent at ratePerHour requests per hour (the stream's
// share of its functionality's budget, C4). It returns false when the rate
// is not positive. The estimate is capped at about 290 years.
func (p Planner) ETA(rowsLeft, requestsLeft int64, ratePerHour float64) (time.Duration, bool) {
	p = p.withDefaults()
	if !(ratePerHour > 0) {
		return 0, false
	}
	req := max(requestsLeft, ceilDiv(rowsLeft, p.PageRows))
	if req <= 0 {
		return 0, true
	}
	d := float64(req) / ratePerHour * float64(time.Hour)
	if d >= math.MaxInt64 {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(d), true
}

// ceilDiv returns ceil(a / b) for a >= 0 and b > 0, 0 for a <= 0.
func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}

// ceilDur rounds d (not negative) up to a multiple of unit.
func ceilDur(d, unit time.Duration) time.Duration {
	if r := d % unit; r != 0 {
		d += unit - r
	}
	return d
}

// ceilTime rounds t up to a multiple of unit on the absolute time line.
func ceilTime(t time.Time, unit time.Duration) time.Time {
	c := t.Truncate(unit)
	if c.Before(t) {
		c = c.Add(unit)
	}
	return c
}
