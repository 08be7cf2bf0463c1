package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// segment is the file a stream appends to: an *os.File, or in tests a
// wrapper that injects faults.
type segment interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

type openFunc func(path string, flag int, perm os.FileMode) (segment, error)

// openOS opens path and gives it exactly perm, whatever the umask.
func openOS(path string, flag int, perm os.FileMode) (segment, error) {
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

type streamKey struct{ tenant, source, account string }

// stream is the files of one (source, account). Writers queue their encoded
// batches; whoever holds sem is the leader: it takes the whole queue, appends
// it, fsyncs once and wakes the others (group commit). Only the leader
// touches the file fields.
type stream struct {
	s      *Sink
	key    record.Stream
	name   string // "source/account", for messages
	ten    string // escaped tenant, a directory name ("" for none)
	src    string // escaped source, a directory name
	acct   string // escaped account, a directory name
	prefix string // filePrefix: "[TENANT-]SOURCE-ACCOUNT-"

	sem   chan struct{} // leadership, capacity 1
	queue chanQueue

	// Owned by the holder of sem.
	f          segment
	path       string    // current file, "" when none
	dir        string    // its directory (Config.Path below DIR)
	cur        fileName  // its name
	opened     time.Time // when it was created, by Sink.now
	size       int64     // bytes in f, all durable
	maxSeq     uint64    // highest record.Batch.Seq in f
	hasBatch   bool      // f holds a batch (maxSeq is set)
	last       fileName  // newest name of the stream, for the next one
	scannedDir string    // the directory last was last merged with
	syncedDir  string    // the directory whose chain of entries was fsynced in this run
	torn       bool      // f holds bytes past size that could not be truncated

	// shared is dir as retention reads it, "" when no file is open.
	shared atomic.Value // string

	// partial is the batch whose first parts were written before a later
	// one failed (partition.go), under partMu.
	partMu  sync.Mutex
	partial partial
}

func (s *Sink) newStream(k streamKey) *stream {
	ten, src, acct := escapeName(k.tenant), escapeName(k.source), escapeName(k.account)
	key := record.Stream{Tenant: k.tenant, Source: k.source, Account: k.account}
	return &stream{
		s:      s,
		key:    key,
		name:   key.String(),
		ten:    ten,
		src:    src,
		acct:   acct,
		prefix: filePrefix(ten, src, acct),
		sem:    make(chan struct{}, 1),
	}
}

// dirFor is the directory of the stream's files for a page fetched at t.
func (st *stream) dirFor(t time.Time) string {
	return filepath.Join(st.s.dir, st.s.layout.dir(st.ten, st.src, st.acct, t))
}

// curDir is the directory of the file being written, "" when none.
func (st *stream) curDir() string {
	d, _ := st.shared.Load().(string)
	return d
}

// pending is one Write's encoded batch waiting for its group commit.
type pending struct {
	ctx   context.Context
	dir   string        // the directory the batch goes to (Config.Path)
	seq   uint64        // its record.Batch.Seq
	buf   *[]byte       // owned by the stream once queued
	done  chan struct{} // closed when err is set
	err   error
	taken bool // a leader took it from the queue (under queue.mu)
}

// commit appends p and waits until it is durable or failed. It returns
// early with ctx's error when the caller's ctx ends first.
func (st *stream) commit(p *pending) error {
	st.queue.push(p)
	select {
	case st.sem <- struct{}{}:
		group := st.queue.take()
		if len(group) > 0 {
			st.flush(group)
		}
		<-st.sem
		// p was in this group or an earlier one: done is closed.
		<-p.done
		return p.err
	case <-p.done:
		return p.err
	case <-p.ctx.Done():
		if st.queue.remove(p) {
			st.s.putBuf(p.buf)
		}
		// Otherwise a leader has it and may still make it durable: the
		// caller's retry may then duplicate it (C7 allows), never tear it.
		return sinkhelper.Kind(kindCanceled, fmt.Errorf("file sink: write %s: %w", st.name, p.ctx.Err()))
	}
}

// flush writes one group as the leader and completes every member.
func (st *stream) flush(group []*pending) {
	live := group[:0]
	for _, p := range group {
		if err := p.ctx.Err(); err != nil {
			st.finish(p, sinkhelper.Kind(kindCanceled, fmt.Errorf("file sink: write %s: %w", st.name, err)))
			continue
		}
		live = append(live, p)
	}
	// A group goes to one directory at a time, in the order it came.
	for len(live) > 0 {
		run, n := 1, int64(len(*live[0].buf))
		for run < len(live) && live[run].dir == live[0].dir {
			n += int64(len(*live[run].buf))
			run++
		}
		err := st.append(live[:run], n)
		for _, p := range live[:run] {
			st.finish(p, err)
		}
		live = live[run:]
	}
}

func (st *stream) finish(p *pending, err error) {
	st.s.putBuf(p.buf)
	p.buf = nil
	p.err = err
	close(p.done)
}

// append writes the group's n bytes (all for one directory) to the
// current file, rotating first when they would take it past MaxBytes or
// go to another directory, and fsyncs. On failure it cuts the
// file back to where the group began and closes it.
func (st *stream) append(group []*pending, n int64) error {
	if err := st.clearTorn(); err != nil {
		return err
	}
	dir := group[0].dir
	if st.f != nil && (st.dir != dir || st.size > 0 && (st.size+n > st.s.cfg.MaxBytes || st.tooOld())) {
		old, size := st.path, st.size
		if err := st.closeFile(); err != nil {
			// The old file is complete and durable; only its rename or
			// close failed. Go on with a new file and say so.
			st.s.log.Error("file sink: closing a full file", "stream", st.name, "path", old, "err", err)
		}
		st.s.rotated.Inc()
		st.s.log.Info("file sink: rotated", "stream", st.name, "path", old, "bytes", size)
	}
	if st.f == nil {
		if err := st.openFile(dir); err != nil {
			return err
		}
	}
	start := st.size
	var err error
	for _, p := range group {
		if _, werr := st.f.Write(*p.buf); werr != nil {
			err = sinkhelper.Kind(kindWrite, wrapPath("append to", st.path, werr))
			break
		}
	}
	if err == nil && st.s.cfg.Fsync {
		if serr := st.f.Sync(); serr != nil {
			err = sinkhelper.Kind(kindSync, wrapPath("fsync", st.path, serr))
		}
	}
	if err == nil {
		st.size = start + n
		end := start
		for _, p := range group {
			st.maxSeq, st.hasBatch = max(st.maxSeq, p.seq), true
			end += int64(len(*p.buf))
			st.s.noteWritten(st, p.seq, end)
		}
		return nil
	}
	st.abandon(start)
	return err
}

// abandon cuts the current file back to good bytes after a failed append
// and closes it, so the next group starts a fresh file on a fresh handle
// (after a failed fsync the kernel's view of the old one is not to be
// trusted). When the cut fails, the file stays open and marked torn: no
// later group writes anywhere before the cut succeeds.
func (st *stream) abandon(good int64) {
	path := st.path
	if err := st.f.Truncate(good); err != nil {
		st.torn = true
		st.s.log.Error("file sink: cannot cut a failed batch off; the stream waits until it can", "stream", st.name, "path", path, "bytes", good, "err", err)
		return
	}
	if st.s.cfg.Fsync {
		_ = st.f.Sync() // best effort: Start repairs a tail a crash brings back
	}
	if err := st.closeFile(); err != nil {
		st.s.log.Warn("file sink: closing a file after a failed write", "stream", st.name, "path", path, "err", err)
	}
}

// clearTorn retries the cut of a torn tail left by abandon.
func (st *stream) clearTorn() error {
	if !st.torn {
		return nil
	}
	if err := st.f.Truncate(st.size); err != nil {
		return sinkhelper.Kind(kindTruncate, fmt.Errorf("file sink: %s keeps the torn tail of a failed write past %d bytes: %w", st.path, st.size, err))
	}
	st.torn = false
	path := st.path
	st.s.log.Info("file sink: torn tail cut", "stream", st.name, "path", path, "bytes", st.size)
	if st.s.cfg.Fsync {
		_ = st.f.Sync()
	}
	if err := st.closeFile(); err != nil {
		st.s.log.Warn("file sink: closing a file after a failed write", "stream", st.name, "path", path, "err", err)
	}
	return nil
}

// openFile creates the stream's next file in dir (and its directories)
// and makes its directory entry durable.
func (st *stream) openFile(dir string) error {
	if err := st.mkdirs(dir); err != nil {
		return sinkhelper.Kind(kindOpen, fmt.Errorf("file sink: %w", err))
	}
	if st.scannedDir != dir {
		last, err := lastFileName(dir, st.prefix)
		if err != nil {
			return sinkhelper.Kind(kindOpen, fmt.Errorf("file sink: %w", err))
		}
		if st.last.less(last) {
			st.last = last
		}
		st.scannedDir = dir
	}
	stamp := st.s.now().UTC().Truncate(time.Millisecond)
	if stamp.Before(st.last.stamp) { // the clock went back: keep names sorted
		stamp = st.last.stamp
	}
	name := fileName{stamp: stamp, seq: st.last.seq + 1, gzip: st.s.cfg.Gzip, part: true}
	var (
		f    segment
		path string
		err  error
	)
	for range 3 {
		path = filepath.Join(dir, name.format(st.prefix))
		f, err = st.s.open(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, st.s.cfg.FileMode)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
		name.seq++ // a name we did not see: never overwrite it
	}
	if err != nil {
		return sinkhelper.Kind(kindOpen, wrapPath("create", path, err))
	}
	st.last = name
	if st.s.cfg.Fsync {
		if err := syncDir(dir); err != nil {
			_ = f.Close()
			_ = os.Remove(path)
			return sinkhelper.Kind(kindSync, fmt.Errorf("file sink: %w", err))
		}
	}
	st.f, st.path, st.dir, st.cur, st.size, st.opened = f, path, dir, name, 0, st.s.now()
	st.maxSeq, st.hasBatch = 0, false
	st.shared.Store(dir)
	st.s.log.Debug("file sink: new file", "stream", st.name, "path", path)
	return nil
}

// mkdirs creates dir and the directories between DIR and it (0750) and,
// once per run and directory, fsyncs the directories whose entries it
// depends on.
func (st *stream) mkdirs(target string) error {
	rel, err := filepath.Rel(st.s.dir, target)
	if err != nil {
		return err
	}
	parents := []string{st.s.dir}
	parent := st.s.dir
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		dir := filepath.Join(parent, part)
		err := os.Mkdir(dir, 0o750)
		if errors.Is(err, fs.ErrExist) {
			var fi os.FileInfo
			if fi, err = os.Stat(dir); err == nil && !fi.IsDir() {
				err = &fs.PathError{Op: "mkdir", Path: dir, Err: errors.New("exists and is not a directory")}
			}
		}
		if err != nil {
			return err
		}
		parents = append(parents, dir)
		parent = dir
	}
	if st.s.cfg.Fsync && st.syncedDir != target {
		for _, d := range parents[:len(parents)-1] {
			if err := syncDir(d); err != nil {
				return err
			}
		}
		st.syncedDir = target
	}
	return nil
}

// tooOld reports whether the current file has been open for MaxAge.
func (st *stream) tooOld() bool {
	return st.s.cfg.MaxAge > 0 && st.s.now().Sub(st.opened) >= st.s.cfg.MaxAge
}

// closeIfOld closes the stream's file when it is too old and no Write is
// using the stream; it never waits for one.
func (st *stream) closeIfOld() {
	select {
	case st.sem <- struct{}{}:
	default:
		return // a leader is writing: it checks the age itself
	}
	defer func() { <-st.sem }()
	if st.f == nil || st.torn || !st.tooOld() {
		return
	}
	path, size := st.path, st.size
	if err := st.closeFile(); err != nil {
		st.s.log.Error("file sink: closing an old file", "stream", st.name, "path", path, "err", err)
		return
	}
	if size > 0 {
		st.s.rotated.Inc()
		st.s.log.Info("file sink: rotated", "stream", st.name, "path", path, "bytes", size, "reason", "max_age")
	}
}

// closeFile closes the current file: an empty one is removed, the others
// get their final name (the *.part suffix goes), the signal that a file is
// complete. Without Fsync it syncs the data first, so that a clean
// shutdown leaves everything on disk.
func (st *stream) closeFile() error {
	f, path, size, cur, dir := st.f, st.path, st.size, st.cur, st.dir
	maxSeq, hasBatch := st.maxSeq, st.hasBatch
	st.f, st.path, st.size = nil, "", 0
	st.shared.Store("")
	var errs []error
	if !st.s.cfg.Fsync && size > 0 {
		errs = append(errs, f.Sync())
	}
	if err := f.Close(); err != nil {
		errs = append(errs, err)
	}
	final := strings.TrimSuffix(path, extPart)
	switch {
	case size == 0:
		errs = append(errs, os.Remove(path))
	case cur.part:
		if err := os.Rename(path, final); err != nil {
			errs = append(errs, err)
		} else {
			st.s.closed(final, st.key, maxSeq, hasBatch)
		}
	default:
		return errors.Join(errs...)
	}
	if st.s.cfg.Fsync {
		errs = append(errs, syncDir(dir))
	}
	return errors.Join(errs...)
}

// lastFileName returns the newest of our file names in dir, zero when none.
func lastFileName(dir, prefix string) (fileName, error) {
	var last fileName
	entries, err := os.ReadDir(dir)
	if err != nil {
		return last, err
	}
	for _, e := range entries {
		if n, ok := parseFileName(prefix, e.Name()); ok && last.less(n) {
			last = n
		}
	}
	return last, nil
}

// syncDir fsyncs a directory, making its entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// wrapPath says what was done to which file, without repeating a path the
// error already names.
func wrapPath(op, path string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok && pe.Path == path {
		return fmt.Errorf("file sink: %w", err)
	}
	return fmt.Errorf("file sink: %s %s: %w", op, path, err)
}
