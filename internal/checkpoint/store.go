package checkpoint

import (
	"context"
	"errors"

	"github.com/svcexport/collector/internal/checkpoint/boltfile"
	"github.com/svcexport/collector/internal/record"
)

// Store keeps one State per stream (record.Stream). The pipeline is its only writer: it commits
// a State only after every page the State covers was acknowledged by the sink
// (DESIGN item 7), so what a Store holds never runs ahead of what was
// delivered.
//
// Implementations are safe for concurrent use. A method called after Close
// returns an error wrapping ErrClosed.
type Store interface {
	// Load returns the state of k and whether there is one. A state that
	// cannot be decoded is an error (wrapping ErrCorrupt or
	// ErrUnknownVersion), never a missing state: a stream must not restart
	// from scratch because its checkpoint was unreadable.
	Load(ctx context.Context, k record.Stream) (State, bool, error)
	// Commit durably stores s as the state of k before it returns.
	Commit(ctx context.Context, k record.Stream, s State) error
	// CommitMany durably stores every state of m in one transaction: either
	// all of them are stored or none. An empty m does nothing.
	CommitMany(ctx context.Context, m map[record.Stream]State) error
	// Apply durably stores every change of c in one transaction: states,
	// window log entries and alert marks together, or none of them
	// (Changes says when the pipeline may put what into it).
	Apply(ctx context.Context, c Changes) error
	// Windows returns the window log of k, sorted by start; empty when k
	// has none.
	Windows(ctx context.Context, k record.Stream) ([]Window, error)
	// Alerts returns the alert marks of k by uuid; empty when k has none.
	Alerts(ctx context.Context, k record.Stream) (map[string]AlertMark, error)
	// All returns every stored state.
	All(ctx context.Context) (map[record.Stream]State, error)
	// Reset removes the state, the window log and the alert marks of one
	// account of source, or of every account of source when account is "",
	// and returns how many states it removed.
	// The next run starts those streams from their configured start.
	Reset(ctx context.Context, source, account string) (n int, err error)
	// Close releases the store. It is safe to call more than once.
	Close() error
}

// Errors a Store returns, wrapped with the file and key concerned; test them
// with errors.Is. Those of the file itself are package boltfile's.
var (
	// ErrLocked: another process holds the checkpoint file.
	ErrLocked = boltfile.ErrLocked
	// ErrCorrupt: the file or a stored value cannot be read: the file was
	// a checkpoint (or a bbolt file) once and is damaged now. A runtime
	// failure: the message says how to recover.
	ErrCorrupt = boltfile.ErrCorrupt
	// ErrNotCheckpoint: the path names something that never was a
	// checkpoint: a directory, a FIFO or another file that is not a regular
	// file, a file that is not a bbolt file at all (a YAML or text file), or
	// another program's bbolt file. A configuration error (checkpoint.path),
	// distinct from ErrCorrupt: an error never wraps both.
	ErrNotCheckpoint = boltfile.ErrNotCheckpoint
	// ErrUnknownVersion: the file or a value was written by a newer (or an
	// unknown) version of the collector.
	ErrUnknownVersion = boltfile.ErrUnknownVersion
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("checkpoint store closed")
	// ErrInvalidKey: a key has an empty source or a source with a NUL byte.
	ErrInvalidKey = errors.New("invalid checkpoint key")
)
