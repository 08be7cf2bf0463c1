package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// tailWindow is how much of a plain file's end Start searches for the zero
// bytes a crash can leave (a file whose size reached the disk before its
// data did). JSON text never holds a raw NUL, so one marks damage.
const tailWindow = 8 << 20

// repairAll visits every directory Config.Path gives a stream below DIR.
// Names that start with a dot (the lock, probes, the record of pruned
// files) and files elsewhere are not ours and are left alone.
func (s *Sink) repairAll(ctx context.Context) error {
	err := s.layout.walk(s.dir, "", "", func(dir, ten, src, acct string) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("file sink: start: %w", err)
		}
		return s.repairStream(dir, filePrefix(ten, src, acct))
	})
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("file sink: %w", err)
	}
	return err
}

// repairStream finishes every *.part file of one stream directory (a
// crash left it being written): it cuts a torn tail and gives the file its
// final name. It also repairs the newest complete plain file, which an
// earlier version of the sink wrote in place.
func (s *Sink) repairStream(dir, prefix string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	var newest string
	var newestName fileName
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		n, ok := parseFileName(prefix, e.Name())
		if !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		switch {
		case n.part && !n.gzip:
			if err := s.finishPlain(path); err != nil {
				return fmt.Errorf("file sink: repair %s: %w", path, err)
			}
		case n.part:
			if err := s.repairPart(path); err != nil {
				return fmt.Errorf("file sink: repair %s: %w", path, err)
			}
		case !n.gzip && (newest == "" || newestName.less(n)):
			newest, newestName = path, n
		}
	}
	if newest != "" {
		if err := s.repairPlain(newest); err != nil {
			return fmt.Errorf("file sink: repair %s: %w", newest, err)
		}
	}
	return nil
}

// finishPlain repairs a plain *.part file (repairPlain) and gives it its
// final name; an empty one is removed.
func (s *Sink) finishPlain(path string) error {
	if err := s.repairPlain(path); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		err = os.Remove(path)
	} else {
		err = os.Rename(path, strings.TrimSuffix(path, extPart))
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// repairPlain cuts a plain file after its last complete line, and before
// the first line that holds a NUL byte near its end.
func (s *Sink) repairPlain(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	end := size
	base := max(0, size-tailWindow)
	tail := make([]byte, size-base)
	if _, err := f.ReadAt(tail, base); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if i := bytes.IndexByte(tail, 0); i >= 0 {
		end = base + int64(i)
	}
	cut, err := lineEnd(f, end)
	if err != nil {
		return err
	}
	if cut == size {
		return nil
	}
	if err := f.Truncate(cut); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	s.log.Warn("file sink: cut the torn tail a crash left", "path", path, "bytes_dropped", size-cut, "bytes_kept", cut)
	return nil
}

// lineEnd returns the offset just after the last '\n' before end, 0 if
// none, reading backwards.
func lineEnd(r io.ReaderAt, end int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end > 0 {
		n := min(int64(len(buf)), end)
		chunk := buf[:n]
		if _, err := r.ReadAt(chunk, end-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// repairPart cuts a gzip file being written after its last complete member
// and gives it its final name (an empty one is removed). Member lengths
// come from the headers (see appendGzip); the last members are inflated to
// check their CRC, since a crash can leave a member of the right length
// that is zeros.
func (s *Sink) repairPart(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	var starts []int64
	var off int64
	hdr := make([]byte, memberHeaderLen)
	for size-off >= memberHeaderLen {
		if _, err := f.ReadAt(hdr, off); err != nil {
			return err
		}
		n, ok := memberLen(hdr)
		if !ok || off+n > size {
			break
		}
		starts = append(starts, off)
		off += n
	}
	good := off
	for len(starts) > 0 {
		last := starts[len(starts)-1]
		if checkMember(io.NewSectionReader(f, last, good-last)) == nil {
			break
		}
		good = last
		starts = starts[:len(starts)-1]
	}
	if good < size {
		if err := f.Truncate(good); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		s.log.Warn("file sink: cut the torn gzip member a crash left", "path", path, "bytes_dropped", size-good, "bytes_kept", good)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if good == 0 {
		err = os.Remove(path)
	} else {
		err = os.Rename(path, strings.TrimSuffix(path, extPart))
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}
