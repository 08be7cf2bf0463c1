package file

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/record"
)

// RetentionConfig bounds what the sink keeps on disk (keys under
// sink.file.retention). Every limit is off at 0, and all are 0 by default:
// the sink cannot know what a shipper or loader downstream has read, so
// it deletes nothing unless told to. Retention deletes only closed files
// (final names, never *.part), never the newest closed file of a stream,
// and never a file holding a batch of this run that the checkpoint has not
// committed yet (see the package doc).
type RetentionConfig struct {
	// MaxFiles keeps at most this many closed files per stream (like
	// logrotate's rotate N and Filebeat's number_of_files); older ones go.
	MaxFiles int `koanf:"max_files"`
	// MaxBytes keeps the files of the whole directory, every stream's open
	// files included, at most this large, deleting the oldest closed files
	// first (by modification time, the moment they were last written).
	MaxBytes int64 `koanf:"max_bytes"`
	// MaxAge deletes closed files last written longer ago than this.
	MaxAge time.Duration `koanf:"max_age"`
}

// enabled reports whether some limit is set.
func (r RetentionConfig) enabled() bool { return r.MaxFiles > 0 || r.MaxBytes > 0 || r.MaxAge > 0 }

// validate names every bad key under prefix (sink.file.retention).
func (r RetentionConfig) validate(prefix string) error {
	var errs []error
	if r.MaxFiles < 0 {
		errs = append(errs, fmt.Errorf("%s.max_files: must be >= 0 (0: no limit), got %d", prefix, r.MaxFiles))
	}
	if r.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("%s.max_bytes: must be >= 0 (0: no limit), got %d", prefix, r.MaxBytes))
	}
	if r.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("%s.max_age: must be >= 0 (0: no limit), got %s", prefix, r.MaxAge))
	}
	return errors.Join(errs...)
}

// Reasons of collector_sink_files_pruned_total.
const (
	pruneCount = "max_files"
	pruneBytes = "max_bytes"
	pruneAge   = "max_age"
)

// prunedDir is the directory below DIR of the records of pruned files:
// DIR/.pruned/SOURCE/ACCOUNT.ndjson, and for a tenant's stream
// DIR/.pruned/TENANT/SOURCE/ACCOUNT.ndjson (escaped names), one
// PrunedFile per line.
const prunedDir = ".pruned"

// PrunedFile is a file that retention deleted: one line of the stream's
// record of pruned files, which collector verify reads (ReadPruned) to
// tell a day retention emptied from a gap.
type PrunedFile struct {
	// File is the file's path relative to DIR.
	File string `json:"file"`
	// First and Last are the earliest and the latest record time in it.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Records and Bytes are its lines and its size on disk.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// PrunedAt is when it was deleted; Reason the limit that deleted it
	// (max_files, max_bytes, max_age).
	PrunedAt time.Time `json:"pruned_at"`
	Reason   string    `json:"reason"`
}

// ReadPruned returns what retention deleted of stream k under root: of
// its tenant's record alone (issue 32: two tenants' streams of the same
// source and account are apart); an empty k.Account takes every account
// of the tenant's source. A torn last line (a crash while it was written)
// is left out.
func ReadPruned(root string, k record.Stream) ([]PrunedFile, error) {
	key := prunedKeyOf(k)
	base := filepath.Join(root, prunedDir, key.ten, key.src)
	paths := []string{filepath.Join(base, key.acct+".ndjson")}
	if k.Account == "" {
		var err error
		if paths, err = filepath.Glob(filepath.Join(base, "*.ndjson")); err != nil {
			return nil, err
		}
	}
	var out []PrunedFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for len(b) > 0 {
			line, rest, ok := bytes.Cut(b, []byte{'\n'})
			if !ok {
				break // torn
			}
			b = rest
			var f PrunedFile
			if err := json.Unmarshal(line, &f); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// closedFile is a file this run closed whose batches the checkpoint had
// not all committed when it was closed.
type closedFile struct {
	stream record.Stream
	maxSeq uint64 // highest record.Batch.Seq in it
}

// Committed implements sink.CommitObserver: every batch of stream with a
// Seq below next is committed. Files whose batches all are become
// candidates for retention, which runs soon after.
func (s *Sink) Committed(stream record.Stream, next uint64) {
	s.retMu.Lock()
	if next > s.committed[stream] {
		s.committed[stream] = next
	}
	for path, c := range s.uncommitted {
		if c.stream == stream && c.maxSeq < next {
			delete(s.uncommitted, path)
		}
	}
	s.retMu.Unlock()
	s.kickRetention()
}

// closed records that path (its final name) was closed holding batches of
// stream up to maxSeq.
func (s *Sink) closed(path string, stream record.Stream, maxSeq uint64, any bool) {
	if !any {
		return
	}
	s.retMu.Lock()
	if maxSeq >= s.committed[stream] {
		s.uncommitted[path] = closedFile{stream: stream, maxSeq: maxSeq}
	}
	s.retMu.Unlock()
	s.kickRetention()
}

// kickRetention asks the janitor for a retention pass.
func (s *Sink) kickRetention() {
	if !s.cfg.Retention.enabled() {
		return
	}
	select {
	case s.retKick <- struct{}{}:
	default:
	}
}

// candidate is a closed file below DIR.
type candidate struct {
	path  string
	rel   string // relative to DIR
	key   prunedKey
	name  fileName
	size  int64
	mtime time.Time
}

// prune is one retention pass: it deletes the closed files beyond the
// limits, oldest first, and records each in DIR/.pruned before it goes.
// Files of this run with uncommitted batches and the newest closed file of
// every stream stay, whatever the limits.
func (s *Sink) prune() error {
	r := s.cfg.Retention
	if !r.enabled() {
		return nil
	}
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	var all []*candidate
	streams := map[prunedKey][]*candidate{}
	var total int64
	err := s.layout.walk(s.dir, "", "", func(dir, ten, src, acct string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		prefix := filePrefix(ten, src, acct)
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			n, ok := parseFileName(prefix, e.Name())
			if !ok {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue // gone meanwhile
			}
			total += fi.Size()
			if n.part {
				continue
			}
			path := filepath.Join(dir, e.Name())
			rel, _ := filepath.Rel(s.dir, path)
			c := &candidate{path: path, rel: rel, key: prunedKey{ten, src, acct}, name: n, size: fi.Size(), mtime: fi.ModTime()}
			streams[c.key] = append(streams[c.key], c)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("file sink: retention: %w", err)
	}
	now := s.now()
	doomed := map[*candidate]string{}
	for _, files := range streams {
		slices.SortFunc(files, func(a, b *candidate) int {
			if a.name.less(b.name) {
				return -1
			}
			if b.name.less(a.name) {
				return 1
			}
			return 0
		})
		files = files[:len(files)-1] // the newest closed file stays
		for i, c := range files {
			switch {
			case !s.isCommitted(c.path):
			case r.MaxFiles > 0 && len(files)+1-i > r.MaxFiles:
				doomed[c] = pruneCount
			case r.MaxAge > 0 && now.Sub(c.mtime) > r.MaxAge:
				doomed[c] = pruneAge
			default:
				all = append(all, c)
			}
		}
	}
	for c := range doomed {
		total -= c.size
	}
	if r.MaxBytes > 0 && total > r.MaxBytes {
		slices.SortFunc(all, func(a, b *candidate) int {
			return cmp.Or(a.mtime.Compare(b.mtime), cmp.Compare(a.rel, b.rel))
		})
		for _, c := range all {
			if total <= r.MaxBytes {
				break
			}
			doomed[c] = pruneBytes
			total -= c.size
		}
	}
	if len(doomed) == 0 {
		return nil
	}
	list := make([]*candidate, 0, len(doomed))
	for c := range doomed {
		list = append(list, c)
	}
	slices.SortFunc(list, func(a, b *candidate) int { return cmp.Compare(a.rel, b.rel) })
	var errs []error
	dirs := map[string]bool{}
	for _, c := range list {
		if err := s.pruneFile(c, doomed[c], now); err != nil {
			errs = append(errs, err)
			continue
		}
		dirs[filepath.Dir(c.path)] = true
	}
	for d := range dirs {
		if s.cfg.Fsync {
			errs = append(errs, syncDir(d))
		}
		if s.layout.timed {
			s.removeIfEmpty(d)
		}
	}
	return errors.Join(errs...)
}

// isCommitted reports whether every batch of path is committed: a file
// this run did not close is one of an earlier run, whose records the
// checkpoint either committed or fetches again (and writes to a new
// file), so no commit depends on it.
func (s *Sink) isCommitted(path string) bool {
	s.retMu.Lock()
	defer s.retMu.Unlock()
	_, waiting := s.uncommitted[path]
	return !waiting
}

// pruneFile records c in DIR/.pruned and deletes it.
func (s *Sink) pruneFile(c *candidate, reason string, now time.Time) error {
	first, last, n, err := recordTimes(c.path, c.name.gzip)
	if err != nil {
		return fmt.Errorf("file sink: retention: read %s: %w", c.path, err)
	}
	line, err := json.Marshal(PrunedFile{File: filepath.ToSlash(c.rel), First: first, Last: last, Records: n, Bytes: c.size,
		PrunedAt: now.UTC(), Reason: reason})
	if err != nil {
		return err
	}
	if err := s.appendPruned(c.key, append(line, '\n')); err != nil {
		return fmt.Errorf("file sink: retention: %w", err)
	}
	if err := os.Remove(c.path); err != nil {
		return fmt.Errorf("file sink: retention: %w", err)
	}
	s.pruned[reason].Inc()
	s.prunedBytes.Add(float64(c.size))
	s.log.Info("file sink: retention deleted a file", "path", c.path, "bytes", c.size, "records", n, "reason", reason,
		"first", first, "last", last)
	return nil
}

// prunedKey names a stream's record of pruned files: its escaped names
// (ten "" without tenants: DIR/.pruned/SOURCE/ACCOUNT.ndjson as ever).
// The writer (prune) has them from the directories it walks, a reader
// from the stream (prunedKeyOf): both escape the names alike.
type prunedKey struct{ ten, src, acct string }

// prunedKeyOf is the key of stream k's record of pruned files.
func prunedKeyOf(k record.Stream) prunedKey {
	return prunedKey{ten: escapeName(k.Tenant), src: escapeName(k.Source), acct: escapeName(k.Account)}
}

// appendPruned appends line to the stream's record of pruned files and
// fsyncs it: the record is durable before the file goes, so a reader never
// misses a deleted file's days.
func (s *Sink) appendPruned(key prunedKey, line []byte) error {
	dir := filepath.Join(s.dir, prunedDir, key.ten, key.src)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, key.acct+".ndjson"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, s.cfg.FileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(line)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// removeIfEmpty removes an emptied time-partition directory, unless a
// stream writes there now.
func (s *Sink) removeIfEmpty(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.streams {
		if st.curDir() == dir {
			return
		}
	}
	_ = os.Remove(dir) // fails when not empty: fine
}

// recordTimes reads the earliest and latest record time of a closed file
// and its lines: the envelope's "time" (RFC 3339), or an OCSF event's
// "time" (epoch milliseconds).
func recordTimes(path string, gz bool) (first, last time.Time, n int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return first, last, 0, err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReaderSize(f, 1<<20)
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return first, last, 0, err
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		t, ok := lineTime(sc.Bytes())
		if !ok {
			continue
		}
		t = t.UTC()
		n++
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return first, last, n, sc.Err()
}

// lineTime is the record time of one line. An envelope line is laid out
// by record.Envelope.AppendJSON (id, source, account, time first), so its
// time is read without decoding the record; other lines are decoded.
func lineTime(line []byte) (time.Time, bool) {
	if bytes.HasPrefix(line, []byte(`{"id":"`)) {
		if _, rest, ok := bytes.Cut(line, []byte(`,"time":"`)); ok {
			if v, _, ok := bytes.Cut(rest, []byte{'"'}); ok {
				if t, err := time.Parse(time.RFC3339Nano, string(v)); err == nil {
					return t, true
				}
			}
		}
	}
	var v struct {
		Time json.RawMessage `json:"time"`
	}
	if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &v) != nil {
		return time.Time{}, false
	}
	if s, err := strconv.Unquote(string(v.Time)); err == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	}
	if ms, err := strconv.ParseInt(strings.TrimSpace(string(v.Time)), 10, 64); err == nil {
		return time.UnixMilli(ms), true
	}
	return time.Time{}, false
}
