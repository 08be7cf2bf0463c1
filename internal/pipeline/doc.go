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
// Start reading at New and Pipeline.Run, then follow a page: a
// producer's Output reserves room in the buffer; at Emit the stream's
// re-ask filter (once) leaves out the records the stream holds already,
// committed in its delivered set or in flight, which is where "each
// record once" is decided for whatever is asked again; the page goes to
// every sink's queue; each sink's workers leave out what that sink's
// recovery found it holds (its held set, in the delivered sets' key form,
// kept by the checkpoint), write it and retry; the tracker
// folds contiguous acknowledged pages into the commit, which stores the
// states, logs, delivered sets, held sets and the sinks' marks in one
// transaction; the filter then lets go of the committed pages' in-flight
// keys;
// at start, each sink's Recover makes it agree with that commit, so that
// each record is stored once in each sink (C7). Health (Stalled, lags,
// errors) feeds /readyz, /healthz and /state.
//
// While Run runs, Add, Remove and Restart change its producers (a
// configuration reload): a removed stream stops once its pages are
// committed, and the other producers never pause.
//
// The once filter also observes, for every record it keeps, how long after
// its record time its page was fetched (collector_record_delay_seconds;
// collector_late_delivery_seconds for the late ones). With tenants, every
// series of a stream carries a tenant label; without, none does.
package pipeline
