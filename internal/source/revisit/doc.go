// Package revisit asks a stream's past again, for what a first fetch
// could not see (C3: late records; C6: alerts that change after
// creation). A Runner, one per poller, does the rechecks of the window log
// (package recheck plans them: due windows counted, narrowed to what grew
// and fetched again; edge windows asked whole and compared by count and id
// digest) and the alert re-asks (the trailing lookback, and the alerts
// followed past it). It keeps the poller's copy of the window log and the
// alert tracker (package alerttrack), logs each window walked whole
// (LogWindow) and defines the changes a page carries to the checkpoint's
// logs (LogChanges, AlertMark).
//
// It asks and delivers only through an Asker, the poller's run: every page
// it emits is a Revisit page that never moves the cursor. It never walks
// fresh windows, plans them, or moves a watermark, and it imports no sink,
// checkpoint, pipeline or configuration package. Rechecks run only when
// the stream is caught up, rank below fresh windows in the budget and stay
// under their share (recheck.Limiter).
package revisit
