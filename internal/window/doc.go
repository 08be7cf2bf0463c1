// Package window plans the time windows the pollers ask for: from a
// watermark to now minus lag, at most max_window long (the API allows 7 days,
// CONTRACT C3), never before max_history, sized from the observed density so
// a window stays well under the result cap, and split when the API says it is
// too large. It is pure: no I/O, the clock is an input.
//
// Planner holds the rules (Next, Split, SplitFull, Start, Remaining, ETA);
// Density is the moving average of rows per hour that sizes the windows.
package window
