// Package cursor is the vocabulary of a stream's progress, the values that
// cross from the poller to the pipeline to the checkpoint unchanged: where
// a stream stands (Cursor, and the Chain in flight), its window log
// (LoggedWindow) and alert marks (AlertMark), the changes a page brings to
// them (LogChanges: WindowChanges and AlertChanges, which merge), and a
// Page, which carries its record.Batch and the cursor that holds once it
// is delivered. A Cursor holds everything a stream knows of itself that
// must survive a restart (where it began, what it learnt of the server:
// Limits, Density, Delays; the last inventory walk's digests: Inventory),
// so that the checkpoint stores it whole and no field is dropped in
// transit. A Page says why it was asked (Asked), and carries the keys its
// records join the delivered set under (Delivered, set by the pipeline's
// once filter). A LoggedWindow keeps how long after its end
// it was last asked (Passed) and when it is next due (Due, set at every
// ask by the recheck plan in force), so that a recheck schedule learnt
// anew brings a point sooner but never drops or postpones one.
//
// Package source produces these values, package pipeline passes them
// through and package checkpoint stores them with its own codec (the file
// format is the checkpoint's, not this package's); package recheck reads
// the window log. It holds values and how changes to them merge: it makes
// no request, plans no window and does no I/O, and imports no internal
// package but record and window.
package cursor
