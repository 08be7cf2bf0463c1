package checkpoint

import (
	"errors"

	"github.com/svcexport/collector/internal/checkpoint/boltfile"
)

// Errors a DB returns, wrapped with the file and key concerned; test them
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
