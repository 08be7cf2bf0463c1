// Package ckptlog owns the two bounded per-stream logs of the checkpoint
// file: the window log (Window: one entry per fetched window, read by
// package recheck through the pipeline) and the alert marks (AlertMark:
// the last update_time emitted per edge alert uuid, C6). It holds their
// value types, their changes (WindowChanges, AlertChanges and how changes
// merge), their byte encodings and bucket layout, and the functions that
// apply changes to them and read them inside a caller's *bolt.Tx.
//
// It owns the "windows" and "alerts" buckets and nothing else: it never
// opens, creates or commits a bbolt file, never touches the meta or states
// buckets, and does not know how a stream's key is encoded (the caller
// passes the key bytes). Package checkpoint joins it with the states in
// one transaction (Open, Apply, Store). The encodings are part of the
// file format: a change of meaning bumps windowVersion or alertVersion,
// and a stored file must read the same before and after any edit here
// (checkpoint's testdata and layout tests pin the bytes).
//
// Errors wrap boltfile.ErrCorrupt or boltfile.ErrUnknownVersion (the same
// values as checkpoint.ErrCorrupt and checkpoint.ErrUnknownVersion).
package ckptlog
