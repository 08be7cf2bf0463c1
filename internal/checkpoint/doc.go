// Package checkpoint persists the progress of every (source, account) stream
// in a bbolt file: its cursor.Cursor (the watermark, the end of the last
// window whose every record was acknowledged; the window in flight; what
// the stream learnt of the server; where it began). It knows neither the
// API nor the sinks; the pipeline commits a State only after the pages it
// covers were acknowledged, in order.
//
// Next to the States it keeps six more kinds of value, each in a bucket
// of its own and committed in the same transaction as the States they
// agree with (Apply, Changes), each written only after what it describes
// was acknowledged, so that a crash at any instant leaves the sinks and
// the checkpoint agreeing (C7):
//
//   - the window log (cursor.LoggedWindow per fetched window: its bounds,
//     its count when fetched, the id digest of an edge window, the recheck
//     points it passed), which package recheck reads to ask windows again
//     for late records (C3);
//   - the alert marks (cursor.AlertMark: the last update_time emitted per
//     edge alert uuid, C6), so that a restart emits only alerts that
//     changed;
//   - the delivered sets (cursor.Delivered: a hash of each id and its
//     record time, per stream, within the period the stream may ask
//     again), so that a recheck, a restarted chain or a resume delivers
//     only what is new;
//   - the sinks' marks (sink.Ledger, opaque here), with which each sink
//     makes its own store agree with the checkpoint after a crash, and
//     the sinks' held sets (sink.Held: what a sink's recovery found it
//     holds past its mark), stored and cut as the delivered sets are;
//   - the platform's delays each stream learnt (recheck: auto).
//
// The logs and sets are pruned by the caller as its horizon moves, and
// bounded per stream (WithWindowLimit, WithAlertLimit). The window log
// stores each window's next due time (version 3; older entries get theirs
// from their last ask at load). What reads and commits map of the file is
// let go once about 1 MiB was mapped, so that the resident set stays
// bounded without a release at every small read of a tailing poll.
//
// The values it stores are package cursor's: the same types the poller
// produces and the pipeline passes on. Their stored form is this
// package's own, versioned and tested against files of earlier versions
// (testdata), so that a change of a cursor type never silently changes
// the file format. Start reading at Open and DB.Apply.
//
// DB (Open) is the checkpoint on a bbolt file; the pipeline consumes it
// through its own pipeline.Store, and package checkpointtest holds an
// in-memory fake for tests. Inspect makes Open's checks of a path without
// creating, repairing or locking anything (for `collector check`, also
// beside a running collector), and ReadSnapshot reads a file read-only.
// States are keyed by record.Stream; the stored key is "source NUL
// account", unchanged since the first version (testdata holds a file of
// that version). Package boltfile owns the file below the buckets: its
// checks before bbolt opens it, its atomic creation, and the repair of a
// damaged meta page; this package owns every bucket (meta, states,
// windows, alerts, delivered, sinks, held, delays) and Open, which joins them.
// Stored values are versioned JSON (states, windows) or versioned bytes
// (alert marks, delivered and held sets): a file or value this version
// cannot read is an error naming the file and key, never a silent reset.
// The one exception is a damaged value of a delivered or held set (its
// checksum fails): it is reported and read as empty, which only delivers
// its records again.
//
// # A damaged file is an error, never a crash or a restart
//
// Open creates a missing file atomically (complete under a temporary name,
// fsynced, then linked into place), so an empty or half-made checkpoint is
// never ours: Open refuses one rather than start over from the configured
// start. Before bbolt sees an existing file, Open reads it itself, never
// past its end (package boltfile, which describes bbolt's layout): the
// size, both meta pages, and every page the current transaction reaches,
// which must lie inside the file. bbolt maps the file, and a truncated one would otherwise
// fault (SIGBUS) in bbolt's check and kill the process; as a second line of
// defence bbolt runs with debug.SetPanicOnFault, so a fault still becomes an
// error. Errors say what happened and how to recover:
//
//   - ErrNotCheckpoint: the path is a directory, a FIFO or another
//     non-regular file, a file that is not bbolt at all, or another
//     program's bbolt file; a configuration error (checkpoint.path).
//   - ErrCorrupt: an empty, truncated or damaged checkpoint; move it aside to
//     start over from sources.*.start, or restore a backup.
//   - ErrUnknownVersion: a newer bbolt format or collector schema.
//
// bbolt keeps two meta pages and writes transaction N to page N%2 after the
// rest of N is on disk, so the older one always describes the previous,
// intact transaction. bbolt 1.5.0 opens a file with one damaged meta page
// from the other, read-only and read-write alike, and rewrites the damaged
// page at the next commit; but its consistency check asserts on the meta
// pages' headers, so it fails when the header is damaged too (a zeroed
// page). Open therefore accepts one damaged meta page: the last commit may
// be lost, which only means its pages are fetched again, and DB.Recovered
// says so for the caller to log. When the header is damaged, Open repairs
// the file before the check: it rewrites the damaged meta page from the
// intact one in a copy and verifies the copy completely; only if that
// passes does it save the file as PATH.damaged-TIMESTAMP and write the
// rewritten page into it. Open never repairs anything else: both meta
// pages damaged, or damage beyond them, is ErrCorrupt, and the file is left
// as it was.
//
// Tenants (config tenants:): a tenant's streams are keyed TENANT/ before
// source and account in every bucket that holds a stream's keys, and the
// one-tenant form's keys are those of before tenants existed. So a
// tenant's progress is one unit: ExportTenant writes it, ImportTenant adds
// it to another checkpoint and DropTenant removes it (moving a tenant
// between shards; tenantBuckets lists the buckets that unit spans).
// A stream's held sets are cut where its delivered set is, and an edge
// alert stream's no earlier than its alert marks are pruned: its re-asks
// reach alerts older than the delivered cutoff.
package checkpoint
