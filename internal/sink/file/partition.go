package file

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
	"github.com/svcexport/collector/internal/sink/sinkhelper"
)

// Where a batch goes (Config.Path, Config.PathTime), and how it is written
// when it goes to several directories.
//
// By fetch time (the default) a batch is one part: the directory of its
// page's fetch time, so a retry goes where the first attempt went. By
// record time each record goes to the directory of its own time, and a
// batch spanning several hours or days is one part per directory, in the
// order of their first records; the records of a part keep their order.
// The parts are written one after the other, each as a batch is (group
// commit, rotation when the directory changes, the ledger's position after
// each: every part carries the batch's Seq, so Mark covers a batch once
// its last part is written, and Recover cuts the parts of a batch the
// checkpoint does not cover, wherever they went). When a part fails, the
// parts before it are durable: the stream remembers how many, and the
// retry of the same batch (the pipeline writes the same *record.Batch
// again) writes only the rest, so no record is stored twice.

// batchPart is the records of a batch that go to one directory.
type batchPart struct {
	dir string
	b   *record.Batch
}

// partial is what a stream remembers of a batch some of whose parts were
// written when a later one failed.
type partial struct {
	b    *record.Batch // the batch, compared by identity: its retry is the same pointer
	done int           // parts written, in order
}

// partition splits b into the parts of Config.Path.
func (s *Sink) partition(st *stream, b *record.Batch) []batchPart {
	if s.cfg.PathTime != PathTimeRecord || !s.layout.timed {
		fetched := s.now()
		if len(b.Envelopes) > 0 && !b.Envelopes[0].FetchedAt.IsZero() {
			fetched = b.Envelopes[0].FetchedAt
		}
		return []batchPart{{dir: st.dirFor(fetched), b: b}}
	}
	var parts []batchPart
	var envs [][]record.Envelope
	at := map[string]int{}
	// Records of one hour share a directory: compute it once per hour.
	var lastHour time.Time
	lastDir := ""
	for _, e := range b.Envelopes {
		h := e.Time.UTC().Truncate(time.Hour)
		if lastDir == "" || !h.Equal(lastHour) {
			lastHour, lastDir = h, st.dirFor(h)
		}
		i, ok := at[lastDir]
		if !ok {
			i = len(parts)
			at[lastDir] = i
			parts = append(parts, batchPart{dir: lastDir})
			envs = append(envs, nil)
		}
		envs[i] = append(envs[i], e)
	}
	if len(parts) <= 1 {
		dir := st.dirFor(s.now())
		if len(parts) == 1 {
			dir = parts[0].dir
		}
		return []batchPart{{dir: dir, b: b}}
	}
	for i := range parts {
		pb := *b
		pb.Envelopes = envs[i]
		parts[i].b = &pb
	}
	return parts
}

// writeBatch writes b's parts that are not written yet (a retry after a
// part failed skips the parts before it) and returns the bytes written.
// Every part is encoded before the first is written: a record the format
// cannot take fails the batch before any of it is on disk.
func (s *Sink) writeBatch(ctx context.Context, st *stream, b *record.Batch) (int, error) {
	parts := s.partition(st, b)
	from := 0
	st.partMu.Lock()
	if st.partial.b == b {
		from = st.partial.done
	}
	st.partial = partial{}
	st.partMu.Unlock()
	ps := make([]*pending, 0, len(parts)-from)
	release := func() {
		for _, p := range ps {
			s.putBuf(p.buf)
		}
	}
	for _, pt := range parts[from:] {
		p, err := s.encode(ctx, pt.b)
		if err != nil {
			release()
			err = fmt.Errorf("file sink: encode %s: %w", st.name, err)
			if errors.Is(err, errUnwritable) {
				// The same record fails the same way every time.
				return 0, sink.Permanent(sinkhelper.Kind(kindInvalid, err))
			}
			return 0, sinkhelper.Kind(kindWrite, err)
		}
		p.dir, p.seq = pt.dir, b.Seq
		ps = append(ps, p)
	}
	n := 0
	for i, p := range ps {
		size := len(*p.buf)
		if err := st.commit(p); err != nil {
			ps = ps[i+1:]
			release()
			if from+i > 0 {
				st.partMu.Lock()
				st.partial = partial{b: b, done: from + i}
				st.partMu.Unlock()
			}
			if errors.Is(err, syscall.ENAMETOOLONG) {
				// A file system with shorter names than checkNames
				// assumes: the same names fail again.
				err = sink.Permanent(err)
			}
			return 0, err
		}
		n += size
	}
	return n, nil
}
