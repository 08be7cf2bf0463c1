package sinkhelper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// Errors of a sink used outside its lifecycle; Base wraps them with the
// sink's name ("kafka sink: not started"). They are not permanent: the
// caller is shutting down or has not started yet.
var (
	ErrNotStarted = errors.New("not started")
	ErrStarted    = errors.New("already started")
	ErrClosed     = errors.New("shut down")
)

// Written is what one push made durable downstream, as Write counts it in
// collector_sink_records_total and collector_sink_bytes_total: a sink's
// own write, not yet delivered (a record is delivered once a checkpoint
// commit covers it in every sink: cursor.Delivered).
type Written struct {
	// Records counts the envelopes written: the batch's, less those
	// dead-lettered.
	Records int
	// Bytes counts the bytes as written downstream (after encoding and
	// compression). A sink that learns its bytes elsewhere (the Kafka
	// producer's hooks) leaves it 0 and calls Base.CountBytes.
	Bytes int64
	// DeadLetters are the batch's records the destination can never take
	// (WithDeadLetters): Write appends them to the dead-letter file before
	// it returns, and fails with kind dead_letter when it cannot.
	DeadLetters []DeadLetter
}

// PushFunc writes one non-empty batch and returns nil only when every
// record of it is durable downstream or in Written.DeadLetters (the
// sink.Sink Write contract). Base calls it between Start and Shutdown only, concurrently,
// with a ctx that had not ended yet. Its errors carry a metric kind (Kind)
// and, when repeating the batch can never succeed, sink.Permanent.
type PushFunc func(ctx context.Context, b *record.Batch) (Written, error)

// Option adds a sink's own step to a Base.
type Option func(*Base)

// WithStart sets what Start does besides the lifecycle: connect, create,
// repair. When it fails the Base stays unstarted and Start may be tried
// again; it must then leave nothing running. Default: nothing.
func WithStart(f func(ctx context.Context) error) Option {
	return func(b *Base) { b.start = f }
}

// WithReady sets the probe Ready runs between Start and Shutdown (a ping, a
// test file). Default: ready whenever started.
func WithReady(f func(ctx context.Context) error) Option {
	return func(b *Base) { b.ready = f }
}

// WithDrain sets the first step of Shutdown, run once no new Write is
// accepted while Writes may still be in flight: flush what is buffered and
// make the Writes in flight finish (close a producer, send pending rows).
// ctx is Shutdown's. Default: nothing.
func WithDrain(f func(ctx context.Context) error) Option {
	return func(b *Base) { b.drain = f }
}

// WithClose sets the last step of Shutdown, run once no Write is in flight:
// release files, locks and connections. When Shutdown's ctx ends before the
// Writes in flight do, Shutdown returns ctx's error and the last of those
// Writes runs the close step (its error is logged). Default: nothing.
func WithClose(f func() error) Option {
	return func(b *Base) { b.close = f }
}

// WithLogger sets the logger of the close step's late errors and of dead
// letters. Default: none.
func WithLogger(log *slog.Logger) Option {
	return func(b *Base) { b.log = log }
}

// WithErrorScrub sets what every error of the sink's steps (start, push,
// ready, drain, close) passes before Base returns or logs it: the
// process's secret scrubber (secret.Scrubber.Error), for sinks whose
// errors may hold a server's words, which may echo a credential. It must
// keep the error's class (errors.Is, errors.As, Kind, sink.Permanent).
// Default: errors pass unchanged.
func WithErrorScrub(f func(error) error) Option {
	return func(b *Base) { b.scrub = f }
}

// WithDeadLetters gives the sink a dead-letter file, DeadLetterFile (see
// DeadLetterFileOf for a sink built through Named) in dir
// (created by Start when missing), whose lines name the destination under
// destKey ("topic"), for the records a push returns in
// Written.DeadLetters. It registers collector_dead_letters_total and the
// error kind dead_letter. Default: no dead-letter file (a push that
// returns dead letters then fails).
func WithDeadLetters(dir, destKey string) Option {
	return func(b *Base) { b.dlDir, b.dlKey = dir, destKey }
}

// WithErrorKinds names the kinds of collector_sink_errors_total the sink
// gives besides Base's own (state, canceled, write, which always exist):
// New creates every one of them at 0, so that dashboards and rate() alerts
// see the series before the first error. Default: Base's kinds only.
func WithErrorKinds(kinds ...string) Option {
	return func(b *Base) { b.kinds = append(b.kinds, kinds...) }
}

// WithDeadLetterReasons names the reasons (DeadLetter.Kind) of
// collector_dead_letters_total the sink gives; New creates each at 0.
// Only with WithDeadLetters. Default: none.
func WithDeadLetterReasons(reasons ...string) Option {
	return func(b *Base) { b.dlReasons = append(b.dlReasons, reasons...) }
}

type state uint8

const (
	stateNew state = iota
	stateStarted
	stateStopping // Shutdown began: no new Write; drain, wait, close
	stateStopped  // the close step ran
)

// Base is the lifecycle, metrics and dead letters of one sink, and its
// sink.Sink: a sink type embeds *Base, so that Base's Start, Write, Ready
// and Shutdown are the sink's, and writes none of them itself; its own
// steps come in through New's push function and options. A sink's further
// interfaces (sink.Ledger, sink.InOrder, sink.CommitObserver) are methods
// of the sink type beside the embedded Base, so that the compiler checks
// them. Build it with New; the zero value is not usable. All methods are
// safe for concurrent use.
type Base struct {
	name  string
	push  PushFunc
	start func(context.Context) error
	ready func(context.Context) error
	drain func(context.Context) error
	close func() error
	log   *slog.Logger
	scrub func(error) error // never nil after New
	dlDir string
	dlKey string

	kinds     []string // of collector_sink_errors_total, created at 0
	dlReasons []string // of collector_dead_letters_total, created at 0

	m  *metrics
	dl *deadLetters // nil without WithDeadLetters

	// life is held (capacity 1) by Start and Shutdown, so they never
	// overlap; a channel so that waiting for it honours ctx.
	life chan struct{}

	mu          sync.Mutex // guards the fields below
	state       state
	inflight    int           // Write and Ready calls under way
	idle        chan struct{} // closed when inflight drops to 0 while stopping
	closeOnIdle bool          // Shutdown gave up waiting: the last call closes
	stopped     chan struct{} // closed once the close step ran
}

// New returns the Base of the sink named name ("file", "kafka": the value
// of the sink label), registering its metrics with reg (nil: metrics
// nobody exports). Through a Registerer of Named, the configured name
// replaces name (the sink's type). push writes a batch; opts add the
// sink's own steps. The sink stores the result in its embedded *Base.
func New(name string, reg prometheus.Registerer, push PushFunc, opts ...Option) (*Base, error) {
	if name == "" || push == nil {
		return nil, errors.New("sinkhelper: a sink needs a name and a push function")
	}
	typeName := name
	name = NameOf(reg, name)
	b := &Base{name: name, push: push, life: make(chan struct{}, 1), stopped: make(chan struct{})}
	for _, o := range opts {
		o(b)
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.scrub == nil {
		b.scrub = func(err error) error { return err }
	}
	m, err := newMetrics(reg, name, b.dlDir != "")
	if err != nil {
		return nil, fmt.Errorf("%s sink: metrics: %w", name, err)
	}
	b.m = m
	// Every known series at 0 from the start: a counter that appears only
	// at its first increment leaves panels empty and rate() alerts late.
	kinds := append([]string{KindState, KindCanceled, KindWrite}, b.kinds...)
	if b.dlDir != "" {
		kinds = append(kinds, KindDeadLetter)
	}
	for _, k := range kinds {
		m.errors.WithLabelValues(k)
	}
	if m.deadLetters != nil {
		for _, r := range b.dlReasons {
			m.deadLetters.WithLabelValues(r)
		}
	}
	if b.dlDir != "" {
		b.dl = newDeadLetters(b.dlDir, DeadLetterFileOf(name, typeName), name, b.dlKey, time.Now)
	}
	return b, nil
}

// errorf prefixes a lifecycle error with the sink's name.
func (b *Base) errorf(err error) error { return fmt.Errorf("%s sink: %w", b.name, err) }

// Start creates the dead-letter directory, if any, and runs the start
// step. It fails with ErrStarted when called again after a successful
// Start and with ErrClosed after Shutdown; a Start that failed may be
// tried again.
func (b *Base) Start(ctx context.Context) error {
	select {
	case b.life <- struct{}{}:
	case <-ctx.Done():
		return b.errorf(fmt.Errorf("start: %w", ctx.Err()))
	}
	defer func() { <-b.life }()
	b.mu.Lock()
	st := b.state
	b.mu.Unlock()
	switch st {
	case stateStarted:
		return b.errorf(ErrStarted)
	case stateStopping, stateStopped:
		return b.errorf(ErrClosed)
	}
	if b.dl != nil {
		if err := os.MkdirAll(b.dlDir, 0o750); err != nil {
			return b.errorf(fmt.Errorf("dead-letter directory: %w", err))
		}
	}
	if b.start != nil {
		if err := b.start(ctx); err != nil {
			return b.scrub(err)
		}
	}
	b.mu.Lock()
	b.state = stateStarted
	b.mu.Unlock()
	return nil
}

// enter counts a Write or Ready call in; it fails outside Start..Shutdown.
func (b *Base) enter() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case stateNew:
		return b.errorf(ErrNotStarted)
	case stateStarted:
		b.inflight++
		return nil
	}
	return b.errorf(ErrClosed)
}

// leave counts a call out; the last one while stopping wakes Shutdown, or
// runs the close step itself when Shutdown stopped waiting.
func (b *Base) leave() {
	b.mu.Lock()
	b.inflight--
	closeNow := false
	if b.inflight == 0 && b.state == stateStopping {
		if b.idle != nil {
			close(b.idle)
			b.idle = nil
		}
		closeNow, b.closeOnIdle = b.closeOnIdle, false
	}
	b.mu.Unlock()
	if closeNow {
		if err := b.finish(); err != nil {
			b.log.Error(b.name+" sink: closing after shutdown", "err", err)
		}
	}
}

// Write writes b through the push function between Start and Shutdown
// and counts the call: its duration (every call), the records and bytes
// written (calls that return nil), its error kind (the others). An empty
// batch is written at once; a ctx already ended fails with kind
// "canceled" before anything is pushed.
func (b *Base) Write(ctx context.Context, batch *record.Batch) error {
	start := time.Now()
	w, err := b.write(ctx, batch)
	b.m.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		b.m.errors.WithLabelValues(KindOf(err)).Inc()
		return err
	}
	b.m.records.Add(float64(w.Records))
	b.m.bytes.Add(float64(w.Bytes))
	return nil
}

func (b *Base) write(ctx context.Context, batch *record.Batch) (Written, error) {
	if err := b.enter(); err != nil {
		return Written{}, Kind(KindState, err)
	}
	defer b.leave()
	if len(batch.Envelopes) == 0 {
		return Written{}, nil
	}
	if err := ctx.Err(); err != nil {
		return Written{}, Kind(KindCanceled, fmt.Errorf("%s sink: write %s/%s page %d: %w", b.name, batch.Source, batch.Account, batch.Page, err))
	}
	w, err := b.push(ctx, batch)
	if err != nil {
		return Written{}, b.scrub(err)
	}
	if err := b.deadLetter(w.DeadLetters); err != nil {
		return Written{}, b.scrub(Kind(KindDeadLetter, fmt.Errorf("%s sink: write %s/%s page %d: %d records the destination never takes: %w",
			b.name, batch.Source, batch.Account, batch.Page, len(w.DeadLetters), err)))
	}
	return w, nil
}

// Ready returns ErrNotStarted or ErrClosed outside Start..Shutdown, else
// the result of the ready step (nil without one).
func (b *Base) Ready(ctx context.Context) error {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	if b.ready == nil {
		return nil
	}
	return b.scrub(b.ready(ctx))
}

// Shutdown stops accepting Writes, runs the drain step, waits for the
// Writes in flight and runs the close step (and closes the dead-letter
// file). When ctx ends first it returns ctx's error and the last Write in
// flight closes. It is safe twice (a second call waits, up to its ctx, for
// the first one's close) and without Start (then no step runs).
func (b *Base) Shutdown(ctx context.Context) error {
	select {
	case b.life <- struct{}{}:
	case <-ctx.Done():
		return b.errorf(fmt.Errorf("shutdown while starting: %w", ctx.Err()))
	}
	defer func() { <-b.life }()
	b.mu.Lock()
	switch b.state {
	case stateNew:
		b.state = stateStopped
		close(b.stopped)
		b.mu.Unlock()
		return nil
	case stateStopping, stateStopped:
		b.mu.Unlock()
		select {
		case <-b.stopped:
			return nil
		case <-ctx.Done():
			return b.errorf(fmt.Errorf("shutdown: writes still under way: %w", ctx.Err()))
		}
	}
	b.state = stateStopping
	b.mu.Unlock()

	var errs []error
	if b.drain != nil {
		errs = append(errs, b.scrub(b.drain(ctx)))
	}
	b.mu.Lock()
	if b.inflight > 0 {
		idle := make(chan struct{})
		b.idle = idle
		b.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			b.mu.Lock()
			if n := b.inflight; n > 0 {
				b.closeOnIdle = true
				b.mu.Unlock()
				return errors.Join(append(errs, b.errorf(fmt.Errorf("shutdown with %d writes under way: %w", n, ctx.Err())))...)
			}
			b.mu.Unlock()
		}
	} else {
		b.mu.Unlock()
	}
	return errors.Join(append(errs, b.finish())...)
}

// finish runs the close step once no call is in flight.
func (b *Base) finish() error {
	var errs []error
	if b.close != nil {
		errs = append(errs, b.scrub(b.close()))
	}
	if b.dl != nil {
		errs = append(errs, b.dl.close())
	}
	b.mu.Lock()
	b.state = stateStopped
	close(b.stopped)
	b.mu.Unlock()
	return errors.Join(errs...)
}

// CountBytes adds n to collector_sink_bytes_total, for a sink whose bytes
// are known apart from its pushes (Written.Bytes 0).
func (b *Base) CountBytes(n int64) { b.m.bytes.Add(float64(n)) }

// Kinds of collector_sink_errors_total that Base itself gives.
const (
	// KindState: Write before Start or after Shutdown.
	KindState = "state"
	// KindCanceled: the Write's ctx ended.
	KindCanceled = "canceled"
	// KindWrite: an error the push function did not mark.
	KindWrite = "write"
	// KindDeadLetter: the dead-letter file could not take the records a
	// push gave it (a sink with WithDeadLetters only).
	KindDeadLetter = "dead_letter"
)

// kindError marks an error with its metric kind.
type kindError struct {
	kind string
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

// Kind marks err with kind, the value of collector_sink_errors_total's
// kind label: a short word from the small set the sink documents, never
// an error message. nil stays nil. It composes with sink.Permanent either
// way round.
func Kind(kind string, err error) error {
	if err == nil {
		return nil
	}
	return &kindError{kind: kind, err: err}
}

// KindOf returns the kind err was marked with (the outermost mark), or
// KindWrite.
func KindOf(err error) string {
	if ke, ok := errors.AsType[*kindError](err); ok {
		return ke.kind
	}
	return KindWrite
}

var _ sink.Sink = (*Base)(nil)
