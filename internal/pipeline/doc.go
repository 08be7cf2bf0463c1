// Package pipeline wires the path of a record: producers (the pollers)
// reserve room and emit pages into a buffer bounded in records, every
// sink's own workers write every page, and the pages every sink
// acknowledged move each stream's checkpoint, in order, over contiguous
// runs only. A page holds its room until every sink is done with it, so a
// slow sink holds the others back and memory stays bounded. It is the one
// package that imports the sources, the sinks and the checkpoint; none of
// them imports it.
//
// It passes package cursor's values through unchanged: a producer's
// cursor.Page carries its record.Batch (the pipeline only numbers it) and
// the cursor.Cursor and cursor.LogChanges that hold once it is delivered;
// the tracker folds those of contiguous acknowledged pages into
// checkpoint.State and checkpoint.Changes, which hold the same cursor
// types.
//
// Files, in the order a page travels: pipeline.go (Producer, Pipeline,
// New, Run: producers, workers, commits), output.go (each producer's
// source.Output: reservations, and pages handed to every sink), slots.go
// (the buffer's semaphore), target.go (one sink: its queue, its pending
// pages, its lag), write.go (each sink's workers and retries, a page
// finished by every sink, permanent errors), tracker.go (contiguous
// acknowledgements), commit.go (Store, the checkpoint as the pipeline
// needs it; the commit loop; the cursor a producer resumes from),
// health.go (Stalled, errors, lags and states for /readyz, /healthz and
// /state), metrics.go, config.go.
package pipeline
