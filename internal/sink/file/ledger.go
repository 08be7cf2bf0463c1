package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// The file sink's ledger (sink.Ledger): its mark says, per stream, which
// file the last batch the checkpoint covers ended in and at which byte.
// After a crash, Recover cuts that file there and removes the stream's
// later files: what they held was never committed and is fetched again,
// so no line is written twice. A stream with files on disk and no entry in
// the mark had none when the mark was taken: all its files are later.

var _ sink.Ledger = (*Sink)(nil)

// filePos is where a stream stood: File is the file's path below DIR under
// its final name (without .part), Off its size then.
type filePos struct {
	File string `json:"f"`
	Off  int64  `json:"o"`
}

// fileMark is the mark: the position of every stream known to the sink,
// by its name prefix ("SOURCE-ACCOUNT-", escaped).
type fileMark struct {
	Version int                `json:"v"`
	Streams map[string]filePos `json:"streams"`
}

const fileMarkVersion = 1

// written is one batch written in this run: its Seq and where it ended.
type written struct {
	seq uint64
	pos filePos
}

// ledger is the sink's side of the protocol; guarded by Sink.ledMu.
type ledger struct {
	pos     map[string]filePos       // as of the last Mark, by prefix
	written map[string][]written     // batches of this run not yet covered, by prefix, in Seq order
	prefix  map[record.Stream]string // stream -> prefix, of streams written in this run
}

// InOrder implements sink.InOrder: with delivery exactly_once a stream's
// batches must come in order, so that the checkpoint covers a prefix of
// each file.
func (s *Sink) InOrder() bool { return s.exactlyOnce() }

// Delivery implements sink.Ledger.
func (s *Sink) Delivery() string { return s.cfg.Delivery }

func (s *Sink) exactlyOnce() bool { return s.cfg.Delivery == sink.DeliveryExactlyOnce }

// noteWritten records that the batch seq of st ended at byte end of the
// current file.
func (s *Sink) noteWritten(st *stream, seq uint64, end int64) {
	if !s.exactlyOnce() {
		return
	}
	rel, err := filepath.Rel(s.dir, st.path)
	if err != nil {
		return
	}
	rel = finalName(rel)
	s.ledMu.Lock()
	defer s.ledMu.Unlock()
	s.led.prefix[st.key] = st.prefix
	s.led.written[st.prefix] = append(s.led.written[st.prefix], written{seq: seq, pos: filePos{File: rel, Off: end}})
}

// finalName is path without a .part suffix.
func finalName(path string) string {
	if n := len(path) - len(extPart); n > 0 && path[n:] == extPart {
		return path[:n]
	}
	return path
}

// Mark implements sink.Ledger: the position of every stream, the streams
// of next as far as their batches below next[k] went.
func (s *Sink) Mark(_ context.Context, next map[record.Stream]uint64) ([]byte, error) {
	if !s.exactlyOnce() {
		return nil, nil
	}
	s.ledMu.Lock()
	defer s.ledMu.Unlock()
	for k, n := range next {
		p, ok := s.led.prefix[k]
		if !ok {
			continue
		}
		ws := s.led.written[p]
		i := 0
		for i < len(ws) && ws[i].seq < n {
			i++
		}
		if i > 0 {
			s.led.pos[p] = ws[i-1].pos
			s.led.written[p] = ws[i:]
		}
	}
	return json.Marshal(fileMark{Version: fileMarkVersion, Streams: s.led.pos})
}

// Recover implements sink.Ledger. With a mark it cuts every stream's files
// back to it; without one (the first run with a checkpoint that has no
// mark of this sink) it cuts nothing. Either way it takes the files as
// they are then as the streams' positions. It returns no ids: what lay
// past the mark is gone and comes again.
func (s *Sink) Recover(ctx context.Context, mark []byte) (sink.Held, error) {
	if !s.exactlyOnce() {
		return nil, nil
	}
	var m fileMark
	if mark != nil {
		if err := json.Unmarshal(mark, &m); err != nil || m.Version != fileMarkVersion {
			return nil, fmt.Errorf("file sink: the checkpoint's mark of this sink is unreadable (version %d): %v", m.Version, err)
		}
	} else {
		s.log.Debug("file sink: the checkpoint has no mark of this sink yet (a first run, or a checkpoint of an older version): files are taken as they are; from the next start on, a restart cuts what the checkpoint does not cover")
	}
	files := map[string][]diskFile{} // by prefix, in writing order
	err := s.layout.walk(s.dir, "", "", func(dir, ten, src, acct string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		prefix := filePrefix(ten, src, acct)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			n, ok := parseFileName(prefix, e.Name())
			if !ok {
				continue
			}
			rel, err := filepath.Rel(s.dir, filepath.Join(dir, e.Name()))
			if err != nil {
				return err
			}
			files[prefix] = append(files[prefix], diskFile{rel: rel, name: n})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("file sink: recover: %w", err)
	}
	pos := map[string]filePos{}
	var cut, removed int
	for prefix, fs := range files {
		sort.Slice(fs, func(i, j int) bool { return fs[i].name.less(fs[j].name) })
		if mark != nil {
			p, ok := m.Streams[prefix]
			var keep []diskFile
			for _, f := range fs {
				switch {
				case ok && f.final() == p.File:
					c, err := s.cutTo(f.rel, p.Off)
					if err != nil {
						return nil, err
					}
					cut += c
					keep = append(keep, f)
				case ok && !p.after(f, fs):
					keep = append(keep, f)
				default:
					if err := s.removeUncommitted(f.rel); err != nil {
						return nil, err
					}
					removed++
				}
			}
			fs = keep
		}
		if len(fs) > 0 {
			last := fs[len(fs)-1]
			fi, err := os.Stat(filepath.Join(s.dir, last.rel))
			if err != nil {
				return nil, fmt.Errorf("file sink: recover: %w", err)
			}
			pos[prefix] = filePos{File: last.final(), Off: fi.Size()}
		}
	}
	if mark != nil {
		// Streams of the mark whose files retention removed since.
		for prefix, p := range m.Streams {
			if _, ok := pos[prefix]; !ok {
				pos[prefix] = p
			}
		}
	}
	if cut > 0 || removed > 0 {
		s.log.Warn("file sink: cut what a crash left past the checkpoint; it is fetched again", "bytes_cut", cut, "files_removed", removed)
	}
	s.ledMu.Lock()
	s.led.pos = pos
	s.ledMu.Unlock()
	return nil, nil
}

// diskFile is one of a stream's files found by Recover.
type diskFile struct {
	rel  string // below DIR
	name fileName
}

func (f diskFile) final() string { return finalName(f.rel) }

// after reports whether f was written after the file of p (by their
// names, which sort in writing order within a stream); a mark whose file
// is gone (retention) orders by the name it had.
func (p filePos) after(f diskFile, _ []diskFile) bool {
	base := filepath.Base(p.File)
	_, n, ok := splitFileName(base)
	if !ok {
		return false // not ours: cut nothing
	}
	return n.less(f.name)
}

// cutTo truncates the file rel (below DIR) to off bytes when it is
// longer, fsynced; it returns the bytes cut.
func (s *Sink) cutTo(rel string, off int64) (int, error) {
	path := filepath.Join(s.dir, rel)
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("file sink: recover: %w", err)
	}
	if fi.Size() <= off {
		return 0, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("file sink: recover: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(off); err != nil {
		return 0, fmt.Errorf("file sink: recover: cut %s to %d bytes: %w", path, off, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("file sink: recover: fsync %s: %w", path, err)
	}
	return int(fi.Size() - off), nil
}

// removeUncommitted removes a file the checkpoint covers nothing of.
func (s *Sink) removeUncommitted(rel string) error {
	path := filepath.Join(s.dir, rel)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("file sink: recover: remove %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("file sink: recover: %w", err)
	}
	return nil
}
