package verify

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink/file"
)

// FileSink counts what the file sink wrote under Dir (layout: package
// internal/sink/file): every *.ndjson, *.ndjson.gz and in-progress *.part
// file in the directories Path gives each target's stream. What a crash
// may have left torn was never acknowledged and is not counted: a last
// line without its newline, a last gzip member that does not end whole.
// Days whose files retention deleted are reported by Pruned.
type FileSink struct {
	Dir string
	// Path is sink.file.path; "" is the default, DIR/SOURCE/ACCOUNT.
	Path string
}

var (
	_ Delivered = FileSink{}
	_ Pruner    = FileSink{}
)

// Pruned implements Pruner: the targets whose time overlaps a file that
// the sink's retention deleted (its record in DIR/.pruned).
func (f FileSink) Pruned(ctx context.Context, targets []Target) (map[Key]bool, error) {
	out := map[Key]bool{}
	byStream := map[record.Stream][]file.PrunedFile{}
	for _, x := range targets {
		ps, ok := byStream[x.Stream]
		if !ok {
			k := x.Stream // its tenant's record alone (issue 32)
			if x.Edge {
				k.Account = "" // an edge stream holds every account's files (C6)
			}
			var err error
			if ps, err = file.ReadPruned(f.Dir, k); err != nil {
				return nil, fmt.Errorf("file sink %s: %w", f.Dir, err)
			}
			byStream[x.Stream] = ps
		}
		for _, p := range ps {
			if !p.First.IsZero() && p.First.Before(x.End) && !p.Last.Before(x.Start) {
				out[x.Key()] = true
				break
			}
		}
	}
	return out, ctx.Err()
}

// Delivered implements Delivered.
func (f FileSink) Delivered(ctx context.Context, targets []Target) (map[Key]int64, error) {
	t := newTally(targets)
	seen := map[record.Stream]bool{}
	for _, x := range targets {
		if seen[x.Stream] {
			continue
		}
		seen[x.Stream] = true
		dirs, err := f.dirs(x)
		if err != nil {
			return nil, err
		}
		for _, dir := range dirs {
			if err := readDir(ctx, dir, t); err != nil {
				return nil, err
			}
		}
	}
	return t.counts(), nil
}

// dirs are the directories that hold x's stream (DIR/SOURCE/ACCOUNT by
// default), for an edge stream those of every account of its source (the
// file sink files a batch by its stream, and an edge stream holds every
// envelope account, C6).
func (f FileSink) dirs(x Target) ([]string, error) {
	account := x.Stream.Account
	if x.Edge {
		account = ""
	}
	out, err := file.StreamDirs(f.Dir, f.Path, x.Stream.Source, account)
	if err != nil {
		return nil, fmt.Errorf("file sink %s: %w", f.Dir, err)
	}
	return out, nil
}

// readDir counts the sink's files in dir into t; a missing dir holds
// nothing.
func readDir(ctx context.Context, dir string, t *tally) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // nothing delivered
	}
	if err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		if !e.Type().IsRegular() || !strings.Contains(name, ".ndjson") {
			continue
		}
		path := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, ".ndjson"), strings.HasSuffix(name, ".ndjson.part"):
			err = readPlain(path, t)
		case strings.HasSuffix(name, ".ndjson.gz"), strings.HasSuffix(name, ".ndjson.gz.part"):
			err = readGzip(path, t)
		default:
			continue
		}
		if err != nil {
			return fmt.Errorf("file sink: %w", err)
		}
	}
	return nil
}

// fileEnvelope is what verify reads of an envelope line.
type fileEnvelope struct {
	ID      string `json:"id"`
	Tenant  string `json:"tenant"`
	Source  string `json:"source"`
	Account string `json:"account"`
	Time    string `json:"time"`
	// Snapshot marks an inventory walk's record (record.Envelope.Snapshot):
	// the state of an agent, in no window the API counts, so not counted.
	Snapshot bool            `json:"snapshot"`
	Record   json.RawMessage `json:"record"`
}

// isSnapshotLine reports whether a line laid out as
// record.Envelope.AppendJSON lays it out is a snapshot's: "snapshot":true
// is the member before the first "record" (no envelope field before it
// can hold that text unescaped).
func isSnapshotLine(b []byte) bool {
	i := bytes.Index(b, []byte(`,"record":`))
	return i >= 0 && bytes.HasSuffix(b[:i], []byte(`"snapshot":true`))
}

// line is one envelope line, counted into t. The file sink writes the
// envelope's fields in a fixed order (record.Envelope.AppendJSON), so a
// line of that shape is read without decoding the record; any other line
// (escapes in a name, an edge alert whose record holds its uuid) is
// decoded whole.
func line(t *tally, b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if id, tenant, source, account, tm, ok := envelopeHead(b); ok && string(source) != alertsSource {
		if isSnapshotLine(b) {
			return nil
		}
		at, err := time.Parse(time.RFC3339Nano, string(tm))
		if err == nil {
			k := t.stream(tenant, source, account)
			if t.wants(k) {
				t.add(k, at, identity(k.Source, id, nil))
			}
			return nil
		}
	}
	var e fileEnvelope
	if err := json.Unmarshal(b, &e); err != nil {
		return fmt.Errorf("a line that is no envelope (%.80q): %w", b, err)
	}
	if e.Snapshot {
		return nil
	}
	tm, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		return fmt.Errorf("envelope %s: time %q: %w", e.ID, e.Time, err)
	}
	t.add(t.resolve(record.Stream{Tenant: e.Tenant, Source: e.Source, Account: e.Account}), tm, identity(e.Source, []byte(e.ID), e.Record))
	return nil
}

// envelopeHead reads the id, source, account and time of a line laid out
// as record.Envelope.AppendJSON lays it out, with no escape in them.
func envelopeHead(b []byte) (id, tenant, source, account, tm []byte, ok bool) {
	rest := b
	field := func(prefix string) []byte {
		if !ok {
			return nil
		}
		r, found := bytes.CutPrefix(rest, []byte(prefix))
		if !found {
			ok = false
			return nil
		}
		v, after, found := bytes.Cut(r, []byte{'"'})
		if !found || bytes.IndexByte(v, '\\') >= 0 {
			ok = false
			return nil
		}
		rest = after
		return v
	}
	ok = true
	id = field(`{"id":"`)
	if bytes.HasPrefix(rest, []byte(`,"tenant":"`)) {
		tenant = field(`,"tenant":"`)
	}
	source = field(`,"source":"`)
	account = field(`,"account":"`)
	tm = field(`,"time":"`)
	return id, tenant, source, account, tm, ok
}

// readLines counts the newline-terminated lines of r; a last line without
// its newline is torn and left out.
func readLines(r io.Reader, t *tally) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if err == io.EOF {
			return nil // b, if any, is a torn last line
		}
		if err != nil {
			return err
		}
		if err := line(t, b); err != nil {
			return err
		}
	}
}

func readPlain(path string, t *tally) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := readLines(f, t); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readGzip counts a gzip file member by member (one member per batch):
// a member that does not end whole (a crash's torn last member) is left
// out with everything after it.
func readGzip(path string, t *tally) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	zr, err := gzip.NewReader(br)
	if errors.Is(err, io.EOF) {
		return nil // an empty file
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for {
		zr.Multistream(false)
		member, err := io.ReadAll(zr)
		if err != nil {
			return nil // torn: never acknowledged
		}
		if err := readLines(bytes.NewReader(member), t); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := zr.Reset(br); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return nil // a torn header after the last whole member
		}
	}
}
