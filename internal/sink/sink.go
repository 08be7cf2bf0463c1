package sink

import (
	"context"
	"errors"

	"github.com/svcexport/collector/internal/record"
)

// Sink delivers batches of envelopes downstream.
//
// Lifecycle: Start once, then any number of concurrent Write calls, then
// Shutdown. Shutdown is safe to call twice or without Start.
type Sink interface {
	// Start connects and prepares the destination (directories, topics,
	// tables). It returns an error when the destination cannot be used at
	// all; it does not start goroutines that outlive Shutdown.
	Start(ctx context.Context) error

	// Write delivers b and returns nil only when every record of b is
	// durable downstream (fsynced, acknowledged by the broker, inserted).
	// On an error nothing of b may be taken as delivered: the caller will
	// call Write again with the same batch after a backoff, and the record
	// ids make the repeat harmless. A record that can never be delivered
	// (too large for the broker) is the sink's to dead-letter, not an error.
	// Write is safe for concurrent use; it honours ctx's deadline.
	Write(ctx context.Context, b *record.Batch) error

	// Ready reports whether the sink can deliver now (for /readyz and
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

// PermanentError marks a Write error that repeating the same batch cannot
// cure (a record the destination's schema can never take, a permission the
// sink lacks for good). The pipeline does not retry it forever: it stops
// the stream with a clear error and an alert-able metric; nothing of the
// batch is acknowledged, so nothing is lost and a restart after the fix
// delivers it. Wrap with Permanent; test with IsPermanent.
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
