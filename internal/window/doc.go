// Package window plans the time windows the pollers ask for: from a
// watermark to now minus lag, at most max_window long (the API allows 7 days,
// CONTRACT C3), never before max_history, sized from the observed density so
// a window stays well under the result cap, and split when the API says it is
// too large. It is pure: no I/O, the clock is an input.
//
// Planner holds the rules (Next, Split, SplitFull, SplitInto, Clamp,
// Start, Remaining, ETA); Density is the moving average of rows per hour
// that sizes the windows. Paging decides how a window is walked from the
// configured limits of result sets and the Limits learnt from the server
// (its full-page size, a capped count, its next-page life, the time a page
// takes): the split threshold, the parts a window is asked in when it
// cannot be finished as asked (C3).
package window
