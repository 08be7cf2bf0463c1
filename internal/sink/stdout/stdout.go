package stdout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinkmetrics"
)

// SinkName is the value of the "sink" label of this sink's metrics.
const SinkName = "stdout"

// Errors returned by a Sink used outside its lifecycle.
var (
	ErrNotStarted = errors.New("stdout sink: not started")
	ErrClosed     = errors.New("stdout sink: shut down")
)

// Config is the configuration of the stdout sink (keys under sink.stdout).
// Nothing is required; the zero value is the default.
type Config struct {
	// Pretty indents each envelope over several lines, for people reading
	// a terminal. The output is then a stream of JSON values, no longer
	// NDJSON. Default false.
	Pretty bool `koanf:"pretty"`
}

// DefaultConfig returns the defaults: Pretty off.
func DefaultConfig() Config { return Config{} }

// Validate returns nil: every Config is valid.
func (c Config) Validate() error { return nil }

// bufSize is the size of the buffer between envelopes and the writer.
const bufSize = 64 << 10

// Sink writes batches to an io.Writer. Build it with New; the zero value is
// not usable. Its methods are safe for concurrent use: one batch is written
// at a time, so lines of different batches never interleave.
type Sink struct {
	cfg     Config
	metrics *sinkmetrics.Metrics

	mu    sync.Mutex // guards state
	state int

	// turn is held (capacity 1) by the one Write that owns the writer and
	// the fields below; a channel rather than a mutex so that waiting for
	// it honours ctx.
	turn chan struct{}
	w    io.Writer
	bw   *bufio.Writer
	line []byte
	torn bool // a failed write may have left a line without its newline
}

const (
	stateNew = iota
	stateStarted
	stateClosed
)

var _ sink.Sink = (*Sink)(nil)

// New returns a sink that writes to w (os.Stdout in production; the caller
// keeps ownership and closes it, if ever) and registers its metrics with reg
// (nil: not exported).
func New(cfg Config, w io.Writer, reg prometheus.Registerer) (*Sink, error) {
	if w == nil {
		return nil, errors.New("stdout sink: nil writer")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := sinkmetrics.New(reg, SinkName)
	if err != nil {
		return nil, fmt.Errorf("stdout sink: metrics: %w", err)
	}
	return &Sink{cfg: cfg, metrics: m, turn: make(chan struct{}, 1), w: w, bw: bufio.NewWriterSize(w, bufSize)}, nil
}

// Start makes the sink accept writes. It does no I/O; calling it again is a
// no-op.
func (s *Sink) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateNew:
		s.state = stateStarted
	case stateClosed:
		return ErrClosed
	}
	return nil
}

// Write writes b's envelopes, one NDJSON line each, flushes them to the
// writer and, when the writer is a regular file (stdout redirected to one),
// fsyncs it; it returns nil once all of that succeeded. On an error the
// batch counts as not written although part of it may have reached the
// reader; the next Write then begins with a newline, so that the torn line
// stays alone and every later line parses. ctx is checked before the batch
// starts; a write under way is not interrupted.
func (s *Sink) Write(ctx context.Context, b *record.Batch) error {
	start := time.Now()
	n, err := s.write(ctx, b)
	s.metrics.WriteDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		kind := "write"
		if ke, ok := errors.AsType[*kindError](err); ok {
			kind = ke.kind
		}
		s.metrics.Error(kind)
		return err
	}
	s.metrics.Records.Add(float64(len(b.Envelopes)))
	s.metrics.Bytes.Add(float64(n))
	return nil
}

func (s *Sink) write(ctx context.Context, b *record.Batch) (int, error) {
	if err := s.usable(); err != nil {
		return 0, &kindError{"state", err}
	}
	if len(b.Envelopes) == 0 {
		return 0, nil
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return 0, &kindError{"canceled", fmt.Errorf("stdout sink: write %s/%s: %w", b.Source, b.Account, ctx.Err())}
	}
	defer func() { <-s.turn }()
	if err := s.usable(); err != nil { // shut down while waiting
		return 0, &kindError{"state", err}
	}
	if err := ctx.Err(); err != nil {
		return 0, &kindError{"canceled", fmt.Errorf("stdout sink: write %s/%s: %w", b.Source, b.Account, err)}
	}
	n := 0
	if s.torn {
		if err := s.bw.WriteByte('\n'); err != nil {
			return 0, s.fail(err)
		}
		n++
	}
	for i := range b.Envelopes {
		s.line = s.encode(s.line[:0], &b.Envelopes[i])
		m, err := s.bw.Write(s.line)
		n += m
		if err != nil {
			return 0, s.fail(err)
		}
	}
	if err := s.bw.Flush(); err != nil {
		return 0, s.fail(err)
	}
	s.torn = false
	if err := s.sync(); err != nil {
		return 0, &kindError{"sync", fmt.Errorf("stdout sink: fsync: %w", err)}
	}
	return n, nil
}

// fail resets the buffer after a failed write (a bufio.Writer keeps its
// error for good) and marks the output torn.
func (s *Sink) fail(err error) error {
	s.bw.Reset(s.w)
	s.torn = true
	return &kindError{"write", fmt.Errorf("stdout sink: write: %w", err)}
}

// sync fsyncs the writer when it is a file that can be synced; pipes,
// terminals and character devices cannot, and that is no error.
func (s *Sink) sync() error {
	f, ok := s.w.(interface{ Sync() error })
	if !ok {
		return nil
	}
	err := f.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EROFS) {
		return nil
	}
	return err
}

// encode appends e as one line (CR and LF in the record, JSON whitespace
// there, become spaces so the line holds), or indented with Pretty.
func (s *Sink) encode(dst []byte, e *record.Envelope) []byte {
	start := len(dst)
	dst = e.AppendJSON(dst)
	if s.cfg.Pretty {
		var ind bytes.Buffer
		if json.Indent(&ind, dst[start:], "", "  ") == nil {
			dst = append(dst[:start], ind.Bytes()...)
		}
		return append(dst, '\n')
	}
	return e.AppendNDJSON(dst[:start])
}

// usable returns nil between Start and Shutdown.
func (s *Sink) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateNew:
		return ErrNotStarted
	case stateClosed:
		return ErrClosed
	}
	return nil
}

// Ready returns nil between Start and Shutdown: a writer cannot be probed
// without writing to it.
func (s *Sink) Ready(ctx context.Context) error { return s.usable() }

// Shutdown stops accepting writes and waits for the Write under way, if
// any, or for ctx to end. Every acknowledged batch was flushed already, so
// nothing is left to flush; the writer is not closed. Safe twice and
// without Start.
func (s *Sink) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.state = stateClosed
	s.mu.Unlock()
	select {
	case s.turn <- struct{}{}:
		<-s.turn
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stdout sink: shutdown with a write under way: %w", ctx.Err())
	}
}

// kindError marks an error with its metric kind.
type kindError struct {
	kind string
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }
