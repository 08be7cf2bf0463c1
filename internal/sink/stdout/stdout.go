package stdout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// SinkName is the value of the "sink" label of this sink's metrics.
const SinkName = "stdout"

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
	cfg  Config
	base *sinkhelper.Base

	// turn is held (capacity 1) by the one Write that owns the writer and
	// the fields below; a channel rather than a mutex so that waiting for
	// it honours ctx.
	turn chan struct{}
	w    io.Writer
	bw   *bufio.Writer
	line []byte
	torn bool // a failed write may have left a line without its newline
}

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
	s := &Sink{cfg: cfg, turn: make(chan struct{}, 1), w: w, bw: bufio.NewWriterSize(w, bufSize)}
	var err error
	if s.base, err = sinkhelper.New(SinkName, reg, s.push); err != nil {
		return nil, err
	}
	return s, nil
}

// Start makes the sink accept writes. It does no I/O; a second Start fails
// with sinkhelper.ErrStarted.
func (s *Sink) Start(ctx context.Context) error { return s.base.Start(ctx) }

// Write writes b's envelopes, one NDJSON line each, flushes them to the
// writer and, when the writer is a regular file (stdout redirected to one),
// fsyncs it; it returns nil once all of that succeeded. On an error the
// batch counts as not written although part of it may have reached the
// reader; the next Write then begins with a newline, so that the torn line
// stays alone and every later line parses. ctx bounds the wait for the
// writer; a write under way is not interrupted. No error is permanent (see
// the package documentation).
func (s *Sink) Write(ctx context.Context, b *record.Batch) error { return s.base.Write(ctx, b) }

// Ready returns nil between Start and Shutdown: a writer cannot be probed
// without writing to it.
func (s *Sink) Ready(ctx context.Context) error { return s.base.Ready(ctx) }

// Shutdown stops accepting writes and waits for the Write under way, if
// any, or for ctx to end. Every acknowledged batch was flushed already, so
// nothing is left to flush; the writer is not closed. Safe twice and
// without Start.
func (s *Sink) Shutdown(ctx context.Context) error { return s.base.Shutdown(ctx) }

// push is the sink's sinkhelper.PushFunc.
func (s *Sink) push(ctx context.Context, b *record.Batch) (sinkhelper.Delivered, error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return sinkhelper.Delivered{}, sinkhelper.Kind(sinkhelper.KindCanceled, fmt.Errorf("stdout sink: write %s/%s: %w", b.Source, b.Account, ctx.Err()))
	}
	defer func() { <-s.turn }()
	if err := ctx.Err(); err != nil {
		return sinkhelper.Delivered{}, sinkhelper.Kind(sinkhelper.KindCanceled, fmt.Errorf("stdout sink: write %s/%s: %w", b.Source, b.Account, err))
	}
	n := 0
	if s.torn {
		if err := s.bw.WriteByte('\n'); err != nil {
			return sinkhelper.Delivered{}, s.fail(err)
		}
		n++
	}
	for i := range b.Envelopes {
		s.line = s.encode(s.line[:0], &b.Envelopes[i])
		m, err := s.bw.Write(s.line)
		n += m
		if err != nil {
			return sinkhelper.Delivered{}, s.fail(err)
		}
	}
	if err := s.bw.Flush(); err != nil {
		return sinkhelper.Delivered{}, s.fail(err)
	}
	s.torn = false
	if err := s.sync(); err != nil {
		return sinkhelper.Delivered{}, sinkhelper.Kind("sync", fmt.Errorf("stdout sink: fsync: %w", err))
	}
	return sinkhelper.Delivered{Records: len(b.Envelopes), Bytes: int64(n)}, nil
}

// fail resets the buffer after a failed write (a bufio.Writer keeps its
// error for good) and marks the output torn.
func (s *Sink) fail(err error) error {
	s.bw.Reset(s.w)
	s.torn = true
	return sinkhelper.Kind(sinkhelper.KindWrite, fmt.Errorf("stdout sink: write: %w", err))
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
