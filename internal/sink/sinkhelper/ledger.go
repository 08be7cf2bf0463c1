package sinkhelper

import (
	"crypto/rand"
	"encoding/hex"
	"iter"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/sink"
)

// Coverage is what the sinks that read back after a crash (Kafka,
// ClickHouse; sink.Ledger) share: every record they write names its batch
// (BatchName: the run, a random id per start, the batch's Seq and its
// stream's account), and their marks say which run wrote and how far the
// checkpoint covers each stream's batches of it (Covered). A record read
// back is one the checkpoint does not cover when its batch names the mark's
// run and a Seq at or past its stream's entry. Records of other runs were
// resolved before the mark, or the checkpoint holds them (sink.Held). The
// zero Coverage is not usable: use NewCoverage. Its methods are safe for
// concurrent use.
type Coverage struct {
	mu      sync.Mutex
	run     string
	covered map[record.Stream]uint64
}

// NewCoverage returns the coverage of a new run.
func NewCoverage() *Coverage {
	return &Coverage{run: newRunID(), covered: map[record.Stream]uint64{}}
}

// newRunID is a random id of a run, 16 hex digits.
func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Covered is a mark's part of Coverage: the run, and per stream the Seq
// of its oldest batch the checkpoint does not cover.
type Covered struct {
	Run     string          `json:"run"`
	Streams []CoveredStream `json:"covered"`
}

// CoveredStream is one stream's entry of Covered.
type CoveredStream struct {
	Tenant  string `json:"t,omitempty"` // "" for the one-tenant form
	Source  string `json:"s"`
	Account string `json:"a"`
	Next    uint64 `json:"n"`
}

// Reset begins a new run: a new run id, nothing covered.
func (c *Coverage) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.run, c.covered = newRunID(), map[record.Stream]uint64{}
}

// Advance records that a commit covers, per stream of next, the batches
// below next[k] (sink.Ledger.Mark), and returns the coverage to store in
// the mark.
func (c *Coverage) Advance(next map[record.Stream]uint64) Covered {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range next {
		if n > c.covered[k] {
			c.covered[k] = n
		}
	}
	out := Covered{Run: c.run}
	for k, n := range c.covered {
		out.Streams = append(out.Streams, CoveredStream{Tenant: k.Tenant, Source: k.Source, Account: k.Account, Next: n})
	}
	return out
}

// BatchName is the name the records of b carry: RUN/SEQ/ACCOUNT, or
// RUN/SEQ@TENANT/ACCOUNT for a batch of a named tenant (a tenant name
// holds no '/' or '@', nor does a Seq).
func (c *Coverage) BatchName(b *record.Batch) string {
	c.mu.Lock()
	run := c.run
	c.mu.Unlock()
	seq := strconv.FormatUint(b.Seq, 10)
	if b.Tenant != "" {
		seq += "@" + b.Tenant
	}
	return run + "/" + seq + "/" + b.Account
}

// Uncovered returns a test of the records read back against the mark's
// coverage m: given a record's source and the name of its batch, it
// reports whether the checkpoint does not cover it, and its batch's
// stream.
func (m Covered) Uncovered() func(source, batch string) (record.Stream, bool) {
	next := make(map[record.Stream]uint64, len(m.Streams))
	for _, s := range m.Streams {
		next[record.Stream{Tenant: s.Tenant, Source: s.Source, Account: s.Account}] = s.Next
	}
	return func(source, batch string) (record.Stream, bool) {
		parts := strings.SplitN(batch, "/", 3)
		if len(parts) != 3 || parts[0] != m.Run || m.Run == "" {
			return record.Stream{}, false
		}
		num, tenant, _ := strings.Cut(parts[1], "@")
		seq, err := strconv.ParseUint(num, 10, 64)
		k := record.Stream{Tenant: tenant, Source: source, Account: parts[2]}
		if err != nil || seq < next[k] {
			return record.Stream{}, false
		}
		return k, true
	}
}

// Add notes in h that the sink holds a copy of the record of id and
// record time t, stored by a batch of stream k: its key in the form of the
// checkpoint's delivered sets (cursor.DeliveredOf).
func Add(h sink.Held, k record.Stream, id string, t time.Time) {
	h[k] = append(h[k], cursor.DeliveredOf(id, t))
}

// Uncovered is the mark bookkeeping the sinks that read back share
// (sink.Ledger: Kafka, ClickHouse): per stream, what the sink noted of
// each batch it handed on in this run (a start offset, a time) until a
// checkpoint commit covers the batch. A mark is taken from what is still
// uncovered. The zero Uncovered is empty and ready to use; it is not safe
// for concurrent use (the sink's ledger lock guards it).
type Uncovered[T any] struct {
	m map[record.Stream][]uncovered[T]
}

type uncovered[T any] struct {
	seq uint64
	v   T
}

// Handed notes v of the batch seq of stream k, handed on now.
func (u *Uncovered[T]) Handed(k record.Stream, seq uint64, v T) {
	if u.m == nil {
		u.m = map[record.Stream][]uncovered[T]{}
	}
	u.m[k] = append(u.m[k], uncovered[T]{seq: seq, v: v})
}

// Cover forgets, per stream of next, the batches below next[k]: a commit
// covers them (sink.Ledger.Mark).
func (u *Uncovered[T]) Cover(next map[record.Stream]uint64) {
	for k, n := range next {
		bs := u.m[k]
		kept := bs[:0]
		for _, b := range bs {
			if b.seq >= n {
				kept = append(kept, b)
			}
		}
		clear(bs[len(kept):])
		if len(kept) == 0 {
			delete(u.m, k)
		} else {
			u.m[k] = kept
		}
	}
}

// All yields what was noted of every batch no commit covers yet.
func (u *Uncovered[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, bs := range u.m {
			for _, b := range bs {
				if !yield(b.v) {
					return
				}
			}
		}
	}
}

// Reset forgets every batch (a new run).
func (u *Uncovered[T]) Reset() { u.m = nil }
