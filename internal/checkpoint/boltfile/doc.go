// Package boltfile guards the checkpoint's bbolt file below its buckets:
// it reads the file's layout itself, with explicit bounds, before bbolt
// maps it (meta.go describes bbolt 1.5.0's layout, walk.go follows every
// page the current transaction reaches), creates a new file atomically
// (files.go), repairs a damaged meta page after proving the repair on a
// copy (repair.go), opens the file with bbolt and turns a fault or a panic
// of bbolt into an error (open.go), and locks files (sys_*.go).
//
// A path that holds no bbolt file (a token file, say) is refused as
// ErrNotCheckpoint with its size, never its bytes: whatever the file
// holds may be a secret.
//
// It knows nothing of what the file stores: the owner (package
// checkpoint) initializes a new file and checks the contents of an
// existing one through callbacks (Create's init, Check). It imports no
// package of the collector. Its errors wrap ErrCorrupt, ErrNotCheckpoint,
// ErrUnknownVersion or ErrLocked, which package checkpoint exports as its
// own.
package boltfile
