package file

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/ocsfenc"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// SinkName is the value of the "sink" label of this sink's metrics.
const SinkName = "file"

// Kinds of collector_sink_errors_total{sink="file"}, besides sinkhelper's
// state and canceled.
const (
	kindInvalid  = "invalid"               // no source or account, names too long (permanent)
	kindOpen     = "open"                  // creating a directory or a file
	kindWrite    = sinkhelper.KindWrite    // appending (disk full, I/O error)
	kindSync     = "sync"                  // fsync of a file or directory
	kindTruncate = "truncate"              // a failed batch could not be cut away
	kindCanceled = sinkhelper.KindCanceled // ctx ended before the batch was durable
)

// Sink writes batches as NDJSON files (see the package doc). Build it with
// New; the zero value is not usable. Its Start, Write, Ready and Shutdown
// are sinkhelper.Base's, which runs the sink's own steps: start, push,
// ready, drain and closeAll. All are safe for concurrent use.
type Sink struct {
	*sinkhelper.Base

	cfg     Config
	dir     string // absolute
	log     *slog.Logger
	rotated prometheus.Counter
	layout  layout           // Config.Path
	line    lineFunc         // per Config.Format
	now     func() time.Time // file name stamps; tests replace it
	open    openFunc         // tests inject faults here

	mu          sync.Mutex // guards the fields below
	streams     map[streamKey]*stream
	unlockDir   func() error
	stopJanitor chan struct{} // closed by Shutdown
	janitorDone chan struct{} // closed when the janitor returns

	// Retention (retention.go).
	retKick     chan struct{} // capacity 1: "run a retention pass"
	pruned      map[string]prometheus.Counter
	prunedBytes prometheus.Counter
	pruneMu     sync.Mutex               // one retention pass at a time
	retMu       sync.Mutex               // guards the two maps below
	committed   map[record.Stream]uint64 // Committed's next per stream
	uncommitted map[string]closedFile    // closed files of this run whose batches are not all committed

	// The ledger (ledger.go).
	ledMu sync.Mutex
	led   ledger

	// bufs keeps a few buffers of at most maxPooled bytes for reuse
	// (encoded batches of small pages, scratch lines); a larger one is
	// left to the GC once written, so that a page's encoding is live only
	// while it is written.
	bufs chan *[]byte
	zws  sync.Pool // *gzip.Writer
}

var _ sink.Sink = (*Sink)(nil)

// New returns a file sink for cfg. It validates cfg and registers the
// sink's metrics with reg (nil: not exported), with format "ocsf"
// collector_ocsf_fallbacks_total{source} too; log may be nil. It touches
// no file: Start does.
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("sink.file.dir: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rotated, err := sinkhelper.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "collector_sink_files_rotated_total",
		Help: "Files a sink closed because they reached their size limit.",
	}, []string{"sink"}))
	if err != nil {
		return nil, fmt.Errorf("file sink: metrics: %w", err)
	}
	lay, err := parseLayout(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("sink.file.path: %w", err)
	}
	prunedFiles, err := sinkhelper.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "collector_sink_files_pruned_total",
		Help: "Closed files a sink's retention deleted, by the limit that deleted them (max_files, max_bytes, max_age).",
	}, []string{"sink", "reason"}))
	if err != nil {
		return nil, fmt.Errorf("file sink: metrics: %w", err)
	}
	prunedBytes, err := sinkhelper.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "collector_sink_pruned_bytes_total",
		Help: "Bytes of the closed files a sink's retention deleted.",
	}, []string{"sink"}))
	if err != nil {
		return nil, fmt.Errorf("file sink: metrics: %w", err)
	}
	name := sinkhelper.NameOf(reg, SinkName)
	line := envelopeLine
	if cfg.Format == FormatOCSF {
		enc, err := ocsfenc.New(cfg.OCSF, reg)
		if err != nil {
			return nil, fmt.Errorf("file sink: %w", err)
		}
		line = ocsfLine(enc)
	}
	s := &Sink{
		cfg:     cfg,
		dir:     dir,
		log:     log.With("sink", SinkName),
		rotated: rotated.WithLabelValues(name),
		layout:  lay,
		line:    line,
		now:     time.Now,
		open:    openOS,
		streams: map[streamKey]*stream{},
		bufs:    make(chan *[]byte, pooled),

		retKick:     make(chan struct{}, 1),
		pruned:      map[string]prometheus.Counter{},
		prunedBytes: prunedBytes.WithLabelValues(name),
		committed:   map[record.Stream]uint64{},
		uncommitted: map[string]closedFile{},
		led:         ledger{pos: map[string]filePos{}, written: map[string][]written{}, prefix: map[record.Stream]string{}},
	}
	for _, reason := range []string{pruneCount, pruneBytes, pruneAge} {
		s.pruned[reason] = prunedFiles.WithLabelValues(name, reason) // 0 from the start
	}
	s.Base, err = sinkhelper.New(SinkName, reg, s.push, sinkhelper.WithLogger(s.log),
		sinkhelper.WithErrorKinds(kindInvalid, kindOpen, kindWrite, kindSync, kindTruncate, kindCanceled),
		sinkhelper.WithStart(s.start), sinkhelper.WithReady(s.ready),
		sinkhelper.WithDrain(s.drain), sinkhelper.WithClose(s.closeAll))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// start is Start's own step: it creates the root directory, takes an
// exclusive lock on it (a second collector on the same directory fails
// here), repairs what a crash may have left in every stream directory (the
// torn tail of every *.part file, which it then renames to its final name;
// the torn last line of the newest plain file an earlier version wrote in
// place), and applies Config.Retention to the files of earlier runs. It
// fails when the directory is unusable or a file cannot be repaired. With
// MaxAge or Retention it starts one goroutine that closes old files of
// quiet streams and deletes what retention allows; Shutdown (drain) stops
// it.
func (s *Sink) start(ctx context.Context) error {
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
	// The files earlier runs left: their records were committed or are
	// fetched again, so retention applies to them at once.
	if err := s.prune(); err != nil {
		s.log.Error("file sink: retention at start", "err", err)
	}
	s.mu.Lock()
	s.unlockDir = unlock
	if s.cfg.MaxAge > 0 || s.cfg.Retention.enabled() {
		s.stopJanitor, s.janitorDone = make(chan struct{}), make(chan struct{})
		go s.janitor(s.stopJanitor, s.janitorDone)
	}
	s.mu.Unlock()
	r := s.cfg.Retention
	s.log.Info("file sink started", "dir", s.dir, "path", s.cfg.Path, "format", s.cfg.Format, "gzip", s.cfg.Gzip, "max_bytes", s.cfg.MaxBytes, "fsync", s.cfg.Fsync,
		"retention_max_files", r.MaxFiles, "retention_max_bytes", r.MaxBytes, "retention_max_age", r.MaxAge)
	return nil
}

// push is the sink's sinkhelper.PushFunc, the body of Write: it appends
// b's envelopes, one NDJSON line each, to the current file of the stream
// (b.Source, b.Account), and returns once they are durable (fsynced unless
// Config.Fsync is off). Concurrent Writes to one stream are appended one
// after the other and share one fsync; different streams proceed in
// parallel. On an error nothing of b counts as written: a partial append
// is truncated away, so a retry neither duplicates a torn line nor leaves
// one. A batch without source or account, or whose names make a file name
// too long, fails with a permanent error (sink.Permanent).
//
// ctx bounds the wait for the stream; a write or fsync already under way is
// not interrupted. When ctx ends after b was handed to the disk, Write
// returns ctx's error although b may become durable: a retry then writes it
// a second time within this run; with delivery exactly_once, Recover at the
// next start cuts whatever the checkpoint did not commit, so a copy never
// outlives a crash (C7).
func (s *Sink) push(ctx context.Context, b *record.Batch) (sinkhelper.Written, error) {
	if b.Source == "" || b.Account == "" {
		return sinkhelper.Written{}, sink.Permanent(sinkhelper.Kind(kindInvalid,
			fmt.Errorf("file sink: batch has no source or account (source %q, account %q)", b.Source, b.Account)))
	}
	if err := checkNames(b.Source, b.Account, s.cfg.Gzip); err != nil {
		return sinkhelper.Written{}, sink.Permanent(sinkhelper.Kind(kindInvalid, fmt.Errorf("file sink: %w", err)))
	}
	if b.Tenant != "" && !s.layout.tenant {
		// Two tenants' streams of one source and account would share
		// the directory the ledger and retention read as one stream's
		// (config refuses this; a test that builds the sink may not).
		return sinkhelper.Written{}, sink.Permanent(sinkhelper.Kind(kindInvalid, fmt.Errorf("file sink: path %q has no {tenant} component, needed for tenant %q", s.cfg.Path, b.Tenant)))
	}
	st := s.stream(b.Tenant, b.Source, b.Account)
	n, err := s.writeBatch(ctx, st, b) // partition.go
	if err != nil {
		return sinkhelper.Written{}, err
	}
	return sinkhelper.Written{Records: len(b.Envelopes), Bytes: int64(n)}, nil
}

// stream returns the stream of (tenant, source, account), created on first use.
func (s *Sink) stream(tenant, source, account string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := streamKey{tenant, source, account}
	st := s.streams[key]
	if st == nil {
		st = s.newStream(key)
		s.streams[key] = st
	}
	return st
}

// encode turns b into the bytes to append: NDJSON lines, or gzip members.
// An envelope the format cannot hold fails it with errUnwritable.
func (s *Sink) encode(ctx context.Context, b *record.Batch) (*pending, error) {
	size := 0
	if !s.cfg.Gzip {
		size = encodedSize(b.Envelopes)
	}
	bp := s.getBuf(size)
	buf := (*bp)[:0]
	if !s.cfg.Gzip {
		// Sized once for the whole batch, not grown by appending.
		buf = slices.Grow(buf, size)
		for i := range b.Envelopes {
			var err error
			if buf, err = s.line(buf, &b.Envelopes[i]); err != nil {
				*bp = buf
				s.putBuf(bp)
				return nil, fmt.Errorf("%w: %w", errUnwritable, err)
			}
		}
		*bp = buf
		return &pending{ctx: ctx, buf: bp, done: make(chan struct{})}, nil
	}
	zw, _ := s.zws.Get().(*gzip.Writer)
	if zw == nil {
		zw = gzip.NewWriter(nil)
	}
	lp := s.getBuf(0)
	var err error
	buf, *lp, err = appendGzip(buf, b.Envelopes, s.line, zw, (*lp)[:0])
	s.zws.Put(zw)
	s.putBuf(lp)
	*bp = buf
	if err != nil {
		s.putBuf(bp)
		return nil, err
	}
	return &pending{ctx: ctx, buf: bp, done: make(chan struct{})}, nil
}

// maxPooled is the largest buffer kept for reuse, and pooled how many are
// kept: a page's encoding (megabytes) is not held between writes (issue
// 30: memory follows pipeline.buffer_records, not page size x streams).
const (
	maxPooled = 1 << 20
	// lineSlack is what an NDJSON line may take beyond
	// record.Envelope.Size (its member names and times: about 35 bytes
	// more than Size counts).
	lineSlack = 64
	pooled    = 8
)

// encodedSize is about the NDJSON bytes of envs in format envelope, a
// little more: record.Envelope.Size, lineSlack and a newline each.
func encodedSize(envs []record.Envelope) int {
	n := 0
	for i := range envs {
		n += envs[i].Size() + lineSlack + 1
	}
	return n
}

// getBuf returns an empty buffer for size bytes: one from the pool when
// size fits a pooled one, else a new one of capacity size (at least 64
// KiB).
func (s *Sink) getBuf(size int) *[]byte {
	if size <= maxPooled {
		select {
		case bp := <-s.bufs:
			return bp
		default:
		}
	}
	b := make([]byte, 0, max(size, 64<<10))
	return &b
}

// putBuf keeps bp for reuse unless it is larger than maxPooled or the
// pool is full.
func (s *Sink) putBuf(bp *[]byte) {
	if bp == nil || cap(*bp) > maxPooled {
		return
	}
	*bp = (*bp)[:0]
	select {
	case s.bufs <- bp:
	default:
	}
}

// janitor closes the old files of quiet streams and runs retention (when
// a file was closed, a commit came, and every tick) until stop is closed.
func (s *Sink) janitor(stop, done chan struct{}) {
	defer close(done)
	every := time.Minute
	if s.cfg.MaxAge > 0 {
		every = min(max(s.cfg.MaxAge/4, time.Second), time.Minute)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.retKick:
			if err := s.prune(); err != nil {
				s.log.Error("file sink: retention", "err", err)
			}
			continue
		case <-tick.C:
		}
		if err := s.prune(); err != nil {
			s.log.Error("file sink: retention", "err", err)
		}
		if s.cfg.MaxAge <= 0 {
			continue
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

// ready is Ready's probe: whether the directory takes a new file now. It
// creates, writes and removes a small hidden file there.
func (s *Sink) ready(ctx context.Context) error {
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

// drain is Shutdown's first step: it stops the janitor. Writes in flight
// finish by themselves.
func (s *Sink) drain(context.Context) error {
	s.mu.Lock()
	stop, done := s.stopJanitor, s.janitorDone
	s.stopJanitor = nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done // it never waits for a stream, so this is short
	}
	return nil
}

// closeAll is Shutdown's last step, run when no Write is under way: it
// syncs and closes every stream's file (renaming gzip files to their final
// name) and releases the directory lock. When Shutdown's ctx ends first,
// the last Write under way runs it.
func (s *Sink) closeAll() error {
	s.mu.Lock()
	defer s.mu.Unlock()
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
