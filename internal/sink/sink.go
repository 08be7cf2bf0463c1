package sink

import (
	"context"
	"errors"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// Sink writes batches of envelopes to a destination.
//
// Lifecycle: Start once, then any number of concurrent Write calls, then
// Shutdown. Shutdown is safe to call twice or without Start.
type Sink interface {
	// Start connects and prepares the destination (directories, topics,
	// tables). It returns an error when the destination cannot be used at
	// all; it does not start goroutines that outlive Shutdown.
	Start(ctx context.Context) error

	// Write writes b and returns nil only when every record of b is
	// durable downstream (fsynced, acknowledged by the broker, inserted).
	// On an error nothing of b may be taken as written: the caller will
	// call Write again with the same batch after a backoff, and the record
	// ids make the repeat harmless. A record that can never be written
	// (too large for the broker) is the sink's to dead-letter, not an error.
	// Write is safe for concurrent use; it honours ctx's deadline.
	Write(ctx context.Context, b *record.Batch) error

	// Ready reports whether the sink can write now (for /readyz and
	// "collector check"); nil means ready.
	Ready(ctx context.Context) error

	// Shutdown flushes what is buffered, releases connections and files,
	// and returns when the sink's goroutines are gone or ctx ends.
	Shutdown(ctx context.Context) error
}

// CommitObserver is a Sink that acts on what the checkpoint has committed
// (the file sink's retention deletes only files whose batches are). After
// every checkpoint commit the pipeline calls Committed for each stream the
// commit moved, with the Seq (record.Batch.Seq) of the stream's oldest
// page the commit does not cover: every batch of the stream with a lower
// Seq that this run handed to Write is committed. Seqs count from 0 in
// each run. Committed must return quickly and be safe for concurrent use.
type CommitObserver interface {
	Committed(stream record.Stream, next uint64)
}

// Ledger is a Sink that stores each record once across crashes and
// restarts: what it has made durable and what the checkpoint says agree
// after a SIGKILL at any instant.
//
// The pipeline's promise to a sink that asks for it (InOrder): it writes a
// stream's batches to it one at a time, in Seq order, and never a batch of
// a stream after one it failed to write in the same run. So what such a
// sink stored of a stream in a run is a run of batches in Seq order, and
// what the checkpoint covers is a prefix of it (the file sink cuts its
// files there). Other sinks get a stream's batches concurrently, from
// pipeline.sink_workers workers, and name the batch of every record they
// store (Kafka, ClickHouse), so that their read-back needs no order.
//
// The protocol:
//   - Mark is called by every checkpoint commit, before its transaction,
//     and the mark it returns is committed in that transaction.
//   - Recover is called once per run, after Start and before any Write,
//     with the mark of the last commit. Right after it the pipeline commits
//     a fresh Mark(nil), so that a crash before the run's first regular
//     commit recovers to the same point.
type Ledger interface {
	Sink

	// Mark returns the sink's position for a checkpoint commit: everything
	// the sink stored of the batches the commit covers lies before it.
	// next holds, for each stream the commit moves, the Seq of the
	// stream's oldest batch the commit does not cover (every batch of the
	// stream with a lower Seq written in this run is covered); streams
	// absent from next keep what earlier calls said (none covered when no
	// call named them). The mark is opaque to the pipeline and at most a
	// few kilobytes.
	Mark(ctx context.Context, next map[record.Stream]uint64) ([]byte, error)

	// Recover makes the sink agree with the checkpoint whose commit stored
	// mark (nil: no commit stored a mark of this sink yet). It removes what
	// the sink stored after the mark where it can (the file sink cuts its
	// files) and returns the records it stored after the mark and cannot
	// remove (Held): the pipeline writes those to this sink no more. An
	// error stops the start: nothing may be written to a sink that does
	// not know what it holds.
	Recover(ctx context.Context, mark []byte) (Held, error)

	// Delivery is the sink's delivery mode as state and /state show it:
	// DeliveryExactlyOnce or DeliveryAtLeastOnce (a sink configured to
	// skip the protocol still answers Mark and Recover, with nil).
	Delivery() string
}

// InOrder is a Sink that must get a stream's batches one at a time and in
// Seq order (see Ledger) when InOrder returns true.
type InOrder interface {
	InOrder() bool
}

// Delivery modes (Ledger.Delivery).
const (
	DeliveryExactlyOnce = "exactly_once"
	DeliveryAtLeastOnce = "at_least_once"
)

// Held is what a sink holds beyond the checkpoint (Ledger.Recover): per
// stream (the stream of the batch that stored it), one key for every copy
// of a record it stored there, in the form of the checkpoint's delivered
// sets: cursor.DeliveredOf of the record's id and record time
// (sinkhelper.Add). The checkpoint keeps it with the same code as those
// sets, cut at the same horizon (CONTRACT C7: each record once per sink).
type Held map[record.Stream][]cursor.Delivered

// PermanentError marks a Write error that repeating the same batch cannot
// cure (a record the destination's schema can never take, a permission the
// sink lacks for good). The pipeline does not retry it forever: it stops
// the stream with a clear error and an alert-able metric; nothing of the
// batch is acknowledged, so nothing is lost and a restart after the fix
// writes it. Wrap with Permanent; test with IsPermanent.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as permanent; nil stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err, or an error it wraps, is permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}
