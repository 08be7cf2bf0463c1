package file

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinkmetrics"
)

// SinkName is the value of the "sink" label of this sink's metrics.
const SinkName = "file"

// Errors returned by a Sink used outside its lifecycle.
var (
	ErrNotStarted = errors.New("file sink: not started")
	ErrClosed     = errors.New("file sink: shut down")
)

// Kinds of collector_sink_errors_total{sink="file"}.
const (
	kindInvalid  = "invalid"  // batch without source or account
	kindOpen     = "open"     // creating a directory or a file
	kindWrite    = "write"    // appending (disk full, I/O error)
	kindSync     = "sync"     // fsync of a file or directory
	kindTruncate = "truncate" // a failed batch could not be cut away
	kindCanceled = "canceled" // ctx ended before the batch was durable
	kindState    = "state"    // Write before Start or after Shutdown
)

// Sink writes batches as NDJSON files (see the package doc). Build it with
// New; the zero value is not usable. Start, Write, Ready and Shutdown are
// safe for concurrent use.
type Sink struct {
	cfg     Config
	dir     string // absolute
	log     *slog.Logger
	metrics *sinkmetrics.Metrics
	rotated prometheus.Counter
	now     func() time.Time // file name stamps; tests replace it
	open    openFunc         // tests inject faults here

	mu          sync.Mutex // guards the fields below
	state       int
	streams     map[streamKey]*stream
	writing     int           // Write calls in progress
	idle        chan struct{} // closed when writing drops to 0 after Shutdown
	closeOnIdle bool          // Shutdown gave up waiting; the last Write closes the files
	unlockDir   func() error
	stopJanitor chan struct{} // closed by Shutdown
	janitorDone chan struct{} // closed when the janitor returns

	bufs sync.Pool // *[]byte, encoded batches and scratch lines
	zws  sync.Pool // *gzip.Writer
}

const (
	stateNew = iota
	stateStarted
	stateClosed
)

var _ sink.Sink = (*Sink)(nil)

// New returns a file sink for cfg. It validates cfg and registers the
// sink's metrics with reg (nil: not exported); log may be nil. It touches no
// file: Start does.
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("sink.file.dir: %w", err)
	}
	m, err := sinkmetrics.New(reg, SinkName)
	if err != nil {
		return nil, fmt.Errorf("file sink: metrics: %w", err)
	}
	rotated, err := registerRotated(reg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sink{
		cfg:     cfg,
		dir:     dir,
		log:     log.With("sink", SinkName),
		metrics: m,
		rotated: rotated,
		now:     time.Now,
		open:    openOS,
		streams: map[streamKey]*stream{},
	}, nil
}

// registerRotated registers collector_sink_files_rotated_total{sink="file"},
// reusing the one already on reg.
func registerRotated(reg prometheus.Registerer) (prometheus.Counter, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "collector_sink_files_rotated_total",
		Help: "Files a sink closed because they reached their size limit.",
	}, []string{"sink"})
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err)
			existing, same := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok || !same {
				return nil, fmt.Errorf("file sink: metrics: %w", err)
			}
			vec = existing
		}
	}
	return vec.WithLabelValues(SinkName), nil
}

// Start creates the root directory, takes an exclusive lock on it (a
// second collector on the same directory fails here), and repairs what a
// crash may have left in every stream directory: the torn last line of the
// newest plain file, and the torn last member of every *.part gzip file,
// which it then renames to its final name. It fails when the directory is
// unusable or a file cannot be repaired. With MaxAge it starts one
// goroutine that closes old files of quiet streams; Shutdown stops it.
// Calling Start again is a no-op.
func (s *Sink) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateStarted:
		return nil
	case stateClosed:
		return ErrClosed
	}
	if err := os.MkdirAll(s.dir, 0o750); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	unlock, err := lockDir(s.dir)
	if err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	if err := s.repairAll(ctx); err != nil {
		_ = unlock()
		return err
	}
	s.unlockDir = unlock
	s.state = stateStarted
	if s.cfg.MaxAge > 0 {
		s.stopJanitor, s.janitorDone = make(chan struct{}), make(chan struct{})
		go s.janitor(s.stopJanitor, s.janitorDone)
	}
	s.log.Info("file sink started", "dir", s.dir, "gzip", s.cfg.Gzip, "max_bytes", s.cfg.MaxBytes, "fsync", s.cfg.Fsync)
	return nil
}

// Write appends b's envelopes, one NDJSON line each, to the current file of
// the stream (b.Source, b.Account), and returns nil once they are durable
// (fsynced unless Config.Fsync is off). Concurrent Writes to one stream are
// appended one after the other and share one fsync; different streams
// proceed in parallel. On an error nothing of b counts as written: a
// partial append is truncated away, so a retry neither duplicates a torn
// line nor leaves one. An empty batch returns nil at once (between Start
// and Shutdown).
//
// ctx bounds the wait for the stream; a write or fsync already under way is
// not interrupted. When ctx ends after b was handed to the disk, Write
// returns ctx's error although b may become durable: a retry then writes it
// a second time, which C7 (at least once, by id) allows.
func (s *Sink) Write(ctx context.Context, b *record.Batch) error {
	start := time.Now()
	err := s.write(ctx, b)
	s.metrics.WriteDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		kind := kindWrite
		if we, ok := errors.AsType[*writeError](err); ok {
			kind = we.kind
		}
		s.metrics.Error(kind)
	}
	return err
}

func (s *Sink) write(ctx context.Context, b *record.Batch) error {
	if len(b.Envelopes) == 0 {
		return s.usable()
	}
	if b.Source == "" || b.Account == "" {
		return &writeError{kindInvalid, fmt.Errorf("file sink: batch has no source or account (source %q, account %q)", b.Source, b.Account)}
	}
	st, err := s.begin(b.Source, b.Account)
	if err != nil {
		return err
	}
	defer s.end()
	if err := ctx.Err(); err != nil {
		return &writeError{kindCanceled, fmt.Errorf("file sink: write %s: %w", st.name, err)}
	}
	p, err := s.encode(ctx, b)
	if err != nil {
		return &writeError{kindWrite, fmt.Errorf("file sink: encode %s: %w", st.name, err)}
	}
	n := len(*p.buf)
	if err := st.commit(p); err != nil {
		return err
	}
	s.metrics.Records.Add(float64(len(b.Envelopes)))
	s.metrics.Bytes.Add(float64(n))
	return nil
}

// begin counts a Write in and returns its stream, created on first use.
func (s *Sink) begin(source, account string) (*stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateNew:
		return nil, &writeError{kindState, ErrNotStarted}
	case stateClosed:
		return nil, &writeError{kindState, ErrClosed}
	}
	key := streamKey{source, account}
	st := s.streams[key]
	if st == nil {
		st = s.newStream(key)
		s.streams[key] = st
	}
	s.writing++
	return st, nil
}

// end counts a Write out; the last one after Shutdown wakes it, or closes
// the files itself when Shutdown stopped waiting.
func (s *Sink) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writing--
	if s.writing > 0 || s.state != stateClosed {
		return
	}
	if s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
	if s.closeOnIdle {
		s.closeOnIdle = false
		if err := s.closeAll(); err != nil {
			s.log.Error("file sink: closing files after shutdown", "err", err)
		}
	}
}

// encode turns b into the bytes to append: NDJSON lines, or gzip members.
func (s *Sink) encode(ctx context.Context, b *record.Batch) (*pending, error) {
	bp := s.getBuf()
	buf := (*bp)[:0]
	if !s.cfg.Gzip {
		for i := range b.Envelopes {
			buf = appendLine(buf, &b.Envelopes[i])
		}
		*bp = buf
		return &pending{ctx: ctx, buf: bp, done: make(chan struct{})}, nil
	}
	zw, _ := s.zws.Get().(*gzip.Writer)
	if zw == nil {
		zw = gzip.NewWriter(nil)
	}
	lp := s.getBuf()
	var err error
	buf, *lp, err = appendGzip(buf, b.Envelopes, zw, (*lp)[:0])
	s.zws.Put(zw)
	s.putBuf(lp)
	*bp = buf
	if err != nil {
		s.putBuf(bp)
		return nil, err
	}
	return &pending{ctx: ctx, buf: bp, done: make(chan struct{})}, nil
}

// maxPooled is the largest buffer kept for reuse.
const maxPooled = 64 << 20

func (s *Sink) getBuf() *[]byte {
	if bp, ok := s.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func (s *Sink) putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooled {
		*bp = (*bp)[:0]
		s.bufs.Put(bp)
	}
}

// usable returns nil between Start and Shutdown.
func (s *Sink) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateNew:
		return &writeError{kindState, ErrNotStarted}
	case stateClosed:
		return &writeError{kindState, ErrClosed}
	}
	return nil
}

// janitor closes the old files of quiet streams until stop is closed.
func (s *Sink) janitor(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(min(max(s.cfg.MaxAge/4, time.Second), time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		streams := make([]*stream, 0, len(s.streams))
		for _, st := range s.streams {
			streams = append(streams, st)
		}
		s.mu.Unlock()
		for _, st := range streams {
			st.closeIfOld()
		}
	}
}

// Ready reports whether the directory takes a new file now: it creates,
// writes and removes a small hidden file there.
func (s *Sink) Ready(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, ".ready-*")
	if err != nil {
		return fmt.Errorf("file sink: %s is not writable: %w", s.dir, err)
	}
	_, werr := f.Write([]byte{'\n'})
	cerr := f.Close()
	rerr := os.Remove(f.Name())
	if err := errors.Join(werr, cerr, rerr); err != nil {
		return fmt.Errorf("file sink: %s is not writable: %w", s.dir, err)
	}
	return nil
}

// Shutdown stops accepting writes, waits for the Writes under way, then
// syncs and closes every file (renaming gzip files to their final name) and
// releases the directory lock. It is safe twice and without Start. When ctx
// ends first it returns ctx's error and the last Write under way closes the
// files.
func (s *Sink) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	switch s.state {
	case stateNew, stateClosed:
		s.state = stateClosed
		s.mu.Unlock()
		return nil
	}
	s.state = stateClosed
	if s.stopJanitor != nil {
		close(s.stopJanitor)
		s.stopJanitor = nil
		done := s.janitorDone
		s.mu.Unlock()
		<-done // it never waits for a stream, so this is short
		s.mu.Lock()
	}
	if s.writing == 0 {
		defer s.mu.Unlock()
		return s.closeAll()
	}
	idle := make(chan struct{})
	s.idle = idle
	s.mu.Unlock()

	select {
	case <-idle:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.closeAll()
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.writing == 0 { // became idle meanwhile
			return s.closeAll()
		}
		s.closeOnIdle = true
		return fmt.Errorf("file sink: shutdown with %d writes under way: %w", s.writing, ctx.Err())
	}
}

// closeAll closes every stream's file and the directory lock. s.mu is held
// and no Write is under way.
func (s *Sink) closeAll() error {
	var errs []error
	for _, st := range s.streams {
		if st.torn {
			// Cut the failed batch off first; when that still fails, close
			// the file as it is and let the next Start repair it.
			if err := st.clearTorn(); err != nil {
				errs = append(errs, err, st.f.Close())
				st.f = nil
			}
		}
		if st.f != nil {
			errs = append(errs, st.closeFile())
		}
	}
	s.streams = map[streamKey]*stream{}
	if s.unlockDir != nil {
		errs = append(errs, s.unlockDir())
		s.unlockDir = nil
	}
	s.log.Info("file sink stopped", "dir", s.dir)
	return errors.Join(errs...)
}

// writeError marks an error with its metric kind.
type writeError struct {
	kind string
	err  error
}

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }
