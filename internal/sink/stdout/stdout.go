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
	"github.com/svcexport/collector/internal/sink/ocsfenc"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// SinkName is the value of the "sink" label of this sink's metrics.
const SinkName = "stdout"

// Values of Config.Format.
const (
	// FormatEnvelope writes each record as its C7 envelope.
	FormatEnvelope = "envelope"
	// FormatOCSF writes each record as an OCSF 1.3.0 event (package ocsf,
	// docs/ocsf.md).
	FormatOCSF = "ocsf"
)

// Config is the configuration of the stdout sink (keys under sink.stdout).
// Nothing is required; the zero value writes envelopes, and its empty
// ocsf names take package ocsf's defaults.
type Config struct {
	// Pretty indents each envelope or event over several lines, for people
	// reading a terminal. The output is then a stream of JSON values, no
	// longer NDJSON. Default false.
	Pretty bool `koanf:"pretty"`
	// Format is what a line holds: "envelope" (the C7 envelope JSON,
	// default; "" means the same) or "ocsf" (one OCSF 1.3.0 event per
	// record, its metadata.uid the record id; docs/ocsf.md).
	Format string `koanf:"format"`
	// OCSF shapes the events of format "ocsf" (keys under
	// sink.stdout.ocsf).
	OCSF ocsfenc.Config `koanf:"ocsf"`
}

// DefaultConfig returns the defaults: Pretty off, Format "envelope", the
// defaults of the ocsf block.
func DefaultConfig() Config { return Config{Format: FormatEnvelope, OCSF: ocsfenc.DefaultConfig()} }

// Validate reports every invalid key, naming it (sink.stdout.format:
// unknown format "xml" (envelope, ocsf)), joined with errors.Join; nil when
// c is usable.
func (c Config) Validate() error {
	var errs []error
	switch c.Format {
	case "", FormatEnvelope, FormatOCSF:
	default:
		errs = append(errs, fmt.Errorf("sink.stdout.format: unknown format %q (%s, %s)", c.Format, FormatEnvelope, FormatOCSF))
	}
	errs = append(errs, c.OCSF.Validate("sink.stdout.ocsf"))
	return errors.Join(errs...)
}

// kindInvalid is the error kind of a batch format ocsf cannot map.
const kindInvalid = "invalid"

// bufSize is the size of the buffer between envelopes and the writer.
const bufSize = 64 << 10

// maxKept is the largest batch buffer kept for the next Write.
const maxKept = 16 << 20

// Sink writes batches to an io.Writer. Build it with New; the zero value is
// not usable. Its Start, Write, Ready and Shutdown are sinkhelper.Base's,
// with push as the body of Write: Start does no I/O, Ready is nil between
// Start and Shutdown (a writer cannot be probed without writing to it),
// and Shutdown has nothing to flush (every acknowledged batch was) and
// leaves the writer open. Its methods are safe for concurrent use: one
// batch is written at a time, so lines of different batches never
// interleave.
type Sink struct {
	*sinkhelper.Base

	cfg  Config
	ocsf *ocsfenc.Encoder // format ocsf; nil for envelopes

	// turn is held (capacity 1) by the one Write that owns the writer and
	// the fields below; a channel rather than a mutex so that waiting for
	// it honours ctx.
	turn chan struct{}
	w    io.Writer
	bw   *bufio.Writer
	buf  []byte // the batch being written
	torn bool   // a failed write may have left a line without its newline
}

var _ sink.Sink = (*Sink)(nil)

// New returns a sink that writes to w (os.Stdout in production; the caller
// keeps ownership and closes it, if ever) and registers its metrics with reg
// (nil: not exported), with format "ocsf" collector_ocsf_fallbacks_total
// too.
func New(cfg Config, w io.Writer, reg prometheus.Registerer) (*Sink, error) {
	if w == nil {
		return nil, errors.New("stdout sink: nil writer")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg, turn: make(chan struct{}, 1), w: w, bw: bufio.NewWriterSize(w, bufSize)}
	var err error
	if cfg.Format == FormatOCSF {
		if s.ocsf, err = ocsfenc.New(cfg.OCSF, reg); err != nil {
			return nil, fmt.Errorf("stdout sink: %w", err)
		}
	}
	if s.Base, err = sinkhelper.New(SinkName, reg, s.push, sinkhelper.WithErrorKinds(kindInvalid, "sync")); err != nil {
		return nil, err
	}
	return s, nil
}

// push is the sink's sinkhelper.PushFunc, the body of Write: it writes
// b's envelopes (or their OCSF events), one NDJSON line each, flushes them
// to the writer and, when the writer is a regular file (stdout redirected
// to one), fsyncs it; it returns nil once all of that succeeded. On an
// error the batch counts as not written although part of it may have
// reached the reader; the next Write then begins with a newline, so that
// the torn line stays alone and every later line parses. ctx bounds the
// wait for the writer; a write under way is not interrupted. The only
// permanent error is a batch that format "ocsf" cannot map (see the
// package documentation); it is refused before anything is written.
func (s *Sink) push(ctx context.Context, b *record.Batch) (sinkhelper.Written, error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return sinkhelper.Written{}, sinkhelper.Kind(sinkhelper.KindCanceled, fmt.Errorf("stdout sink: write %s/%s: %w", b.Source, b.Account, ctx.Err()))
	}
	defer func() { <-s.turn }()
	if err := ctx.Err(); err != nil {
		return sinkhelper.Written{}, sinkhelper.Kind(sinkhelper.KindCanceled, fmt.Errorf("stdout sink: write %s/%s: %w", b.Source, b.Account, err))
	}
	// Encode the whole batch first: a record that cannot be mapped fails
	// it before a byte reaches the reader.
	buf := s.buf[:0]
	for i := range b.Envelopes {
		var err error
		if buf, err = s.encode(buf, &b.Envelopes[i]); err != nil {
			return sinkhelper.Written{}, sink.Permanent(sinkhelper.Kind(kindInvalid, fmt.Errorf("stdout sink: %s/%s: %w", b.Source, b.Account, err)))
		}
	}
	if cap(buf) <= maxKept {
		s.buf = buf
	}
	n := 0
	if s.torn {
		if err := s.bw.WriteByte('\n'); err != nil {
			return sinkhelper.Written{}, s.fail(err)
		}
		n++
	}
	m, err := s.bw.Write(buf)
	n += m
	if err != nil {
		return sinkhelper.Written{}, s.fail(err)
	}
	if err := s.bw.Flush(); err != nil {
		return sinkhelper.Written{}, s.fail(err)
	}
	s.torn = false
	if err := s.sync(); err != nil {
		return sinkhelper.Written{}, sinkhelper.Kind("sync", fmt.Errorf("stdout sink: fsync: %w", err))
	}
	return sinkhelper.Written{Records: len(b.Envelopes), Bytes: int64(n)}, nil
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
// there, become spaces so the line holds), or indented with Pretty; with
// format ocsf the line is the record's event. An error means e cannot be
// mapped (format ocsf only); dst is then returned unchanged.
func (s *Sink) encode(dst []byte, e *record.Envelope) ([]byte, error) {
	start := len(dst)
	switch {
	case s.ocsf != nil:
		out, err := s.ocsf.Append(dst, e)
		if err != nil {
			return dst, err
		}
		dst = out
	case s.cfg.Pretty:
		dst = e.AppendJSON(dst)
	default:
		return e.AppendNDJSON(dst), nil
	}
	if s.cfg.Pretty {
		var ind bytes.Buffer
		if json.Indent(&ind, dst[start:], "", "  ") == nil {
			dst = append(dst[:start], ind.Bytes()...)
		}
	}
	return append(dst, '\n'), nil
}
