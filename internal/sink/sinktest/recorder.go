package sinktest

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// ErrInjected is the error of writes told to fail with a nil error.
var ErrInjected = errors.New("sinktest: injected write failure")

// ErrShutdown is returned by Write after Shutdown.
var ErrShutdown = errors.New("sinktest: write after shutdown")

// Recorder is a sink.Sink that records what it is given. The zero value is
// ready to use; a Recorder must not be copied after first use. All methods
// are safe for concurrent use.
//
// A Write first waits while the recorder is held (Hold), then fails if
// failures are pending (FailNext), then records a deep copy of the batch and
// returns nil. Writes need no Start; a Write after Shutdown returns
// ErrShutdown.
type Recorder struct {
	mu       sync.Mutex
	batches  []record.Batch
	records  int
	stats    Stats
	failN    int
	failErr  error
	readyErr error
	hold     chan struct{} // non-nil while held; closed to release
	changed  chan struct{} // closed and replaced on every change
	shutdown bool
}

var _ sink.Sink = (*Recorder)(nil)

// Stats counts the calls a Recorder received and what it holds.
type Stats struct {
	Starts, Readies, Shutdowns int
	// Writes counts Write calls; Failed those that returned an error
	// (injected, canceled while held, after Shutdown).
	Writes, Failed int
	// Waiting is the number of Writes held right now.
	Waiting int
	// Batches and Records count what was recorded.
	Batches, Records int
}

// Start counts the call and returns nil.
func (r *Recorder) Start(ctx context.Context) error {
	r.update(func() { r.stats.Starts++ })
	return nil
}

// Write records a deep copy of b (see Recorder for the order of holding and
// failing). While held it returns ctx's error when ctx ends first.
func (r *Recorder) Write(ctx context.Context, b *record.Batch) error {
	r.mu.Lock()
	r.stats.Writes++
	hold := r.hold
	if hold != nil {
		r.stats.Waiting++
	}
	r.changedLocked()
	r.mu.Unlock()

	if hold != nil {
		var err error
		select {
		case <-hold:
		case <-ctx.Done():
			err = ctx.Err()
		}
		r.mu.Lock()
		r.stats.Waiting--
		if err != nil {
			r.stats.Failed++
		}
		r.changedLocked()
		r.mu.Unlock()
		if err != nil {
			return err
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.changedLocked()
	switch {
	case r.shutdown:
		r.stats.Failed++
		return ErrShutdown
	case r.failN > 0:
		r.failN--
		r.stats.Failed++
		if r.failErr != nil {
			return r.failErr
		}
		return ErrInjected
	}
	r.batches = append(r.batches, copyBatch(b))
	r.stats.Batches++
	r.stats.Records += len(b.Envelopes)
	return nil
}

// Ready counts the call and returns the error set by SetReady (nil at
// first).
func (r *Recorder) Ready(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Readies++
	r.changedLocked()
	return r.readyErr
}

// Shutdown counts the call; later Writes return ErrShutdown. Safe twice.
func (r *Recorder) Shutdown(ctx context.Context) error {
	r.update(func() { r.stats.Shutdowns++; r.shutdown = true })
	return nil
}

// FailNext makes the next n Writes (after any hold) return err, or
// ErrInjected when err is nil, without recording their batches. It replaces
// failures still pending.
func (r *Recorder) FailNext(n int, err error) {
	r.update(func() { r.failN, r.failErr = n, err })
}

// SetReady sets what Ready returns.
func (r *Recorder) SetReady(err error) {
	r.update(func() { r.readyErr = err })
}

// Hold makes every Write block from now on until release is called (or its
// ctx ends), so that a test can watch its producers stall. release is safe
// to call more than once; Hold while held returns the same release.
func (r *Recorder) Hold() (release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold == nil {
		r.hold = make(chan struct{})
	}
	hold := r.hold
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.hold == hold {
			close(hold)
			r.hold = nil
			r.changedLocked()
		}
	}
}

// Stats returns the counts now.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Batches returns copies of the recorded batches in the order their Writes
// completed.
func (r *Recorder) Batches() []record.Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]record.Batch, len(r.batches))
	for i := range r.batches {
		out[i] = copyBatch(&r.batches[i])
	}
	return out
}

// Envelopes returns copies of every recorded envelope, batch after batch.
func (r *Recorder) Envelopes() []record.Envelope {
	var out []record.Envelope
	for _, b := range r.Batches() {
		out = append(out, b.Envelopes...)
	}
	return out
}

// Reset forgets the recorded batches (counters stay).
func (r *Recorder) Reset() {
	r.update(func() { r.batches = nil })
}

// WaitFor blocks until cond holds for the current Stats or ctx ends, so a
// test waits for "3 Writes held" or "500 records" without sleeping. cond
// runs with the Recorder locked: it must not call the Recorder.
func (r *Recorder) WaitFor(ctx context.Context, cond func(Stats) bool) error {
	for {
		r.mu.Lock()
		if cond(r.stats) {
			r.mu.Unlock()
			return nil
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *Recorder) update(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
	r.changedLocked()
}

// changedLocked wakes the WaitFor calls; r.mu is held.
func (r *Recorder) changedLocked() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// copyBatch copies b, its envelopes and their record bytes, which may share
// a page buffer the caller reuses.
func copyBatch(b *record.Batch) record.Batch {
	c := *b
	c.Envelopes = slices.Clone(b.Envelopes)
	for i := range c.Envelopes {
		c.Envelopes[i].Record = slices.Clone(c.Envelopes[i].Record)
	}
	return c
}

// HeldCount counts the keys h holds of stream k: how many copies of each
// record a sink's Recover read back (sink.Held).
func HeldCount(h sink.Held, k record.Stream) map[cursor.Delivered]int {
	n := map[cursor.Delivered]int{}
	for _, d := range h[k] {
		n[d]++
	}
	return n
}
