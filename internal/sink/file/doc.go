// Package file is the embedded sink that needs no server: it writes every
// envelope (CONTRACT C7) as one line of NDJSON to local files that a
// shipper (Filebeat, Vector, Fluent Bit) or a batch job reads. A line is
// the envelope (Config.Format "envelope", the default) or the record's
// OCSF 1.3.0 event (format "ocsf", package ocsf and docs/ocsf.md: its
// metadata.uid is the record id; values that do not fit the schema go
// under unmapped and count in collector_ocsf_fallbacks_total{source}).
//
// It owns DIR and everything below it; it knows envelopes and batches, never
// the API, the windows or the checkpoint.
//
// # Layout
//
//	DIR/.lock                                    flock: one collector per DIR
//	DIR/.pruned/SOURCE/ACCOUNT.ndjson            what retention deleted (PrunedFile lines;
//	                                             DIR/.pruned/TENANT/SOURCE/ACCOUNT.ndjson with tenants)
//	DIR/SOURCE/ACCOUNT/SOURCE-ACCOUNT-20261122T153000.123Z-000001.ndjson
//	DIR/SOURCE/ACCOUNT/SOURCE-ACCOUNT-20261122T154512.004Z-000002.ndjson.part
//	(gzip: *.ndjson.gz, and *.ndjson.gz.part while written)
//
// SOURCE/ACCOUNT is Config.Path, "{source}/{account}" by default; a
// template such as "{source}/{account}/{yyyy}/{mm}/{dd}" partitions a
// stream by the UTC time its pages were fetched (the envelopes'
// fetched_at: a retry of a batch goes where its first attempt went, and a
// batch is never split across directories; record times may lie earlier,
// by the window's span and the API's ingestion delay), or, with
// Config.PathTime "record", by each record's own time: a batch spanning
// several directories is written as one part per directory, each under
// the batch's Seq in the ledger (partition.go). A file is closed when the
// stream's next batch (or part) goes to another directory. Directories are
// 0750, files Config.FileMode (0640). Source and account
// names are escaped (bytes outside [A-Za-z0-9_.-] and a leading dot become
// %XX), so no name can leave its directory. The stamp is when the file was
// begun (UTC, milliseconds, never earlier than the stream's previous file);
// the number grows by one per file of a stream across restarts: within a
// stream, names sort in writing order. Every run begins new files; files of
// earlier runs are never appended to.
//
// # Durability
//
// Write returns nil only after the batch's bytes and, for a new file, its
// directory entry are fsynced (Config.Fsync, on by default). Concurrent
// Writes to one stream share an fsync (group commit); streams proceed in
// parallel. A failed Write is cut off the file (truncated to where it
// began), so a retry neither duplicates a half batch nor tears a line.
// A Write by itself may land twice (a batch written again after a crash or
// a cancelled Write); with delivery exactly_once (the default) the sink's
// ledger makes that impossible: Mark records where each stream's files end
// at every checkpoint commit, and Recover cuts what a crash left past it,
// so each record is stored once (C7). Delivery at_least_once skips the
// ledger, and a copy then carries the same C7 id.
//
// # Plain files: *.ndjson.part until complete
//
// A file is closed when the next batch would take it past Config.MaxBytes,
// when it is Config.MaxAge old (1h; checked at the stream's next write, and
// for quiet streams by one goroutine that Start starts and Shutdown stops),
// when the next batch goes to another directory (Config.Path), and at
// Shutdown; a batch is never split across files. A file is written as
// *.ndjson.part and renamed to *.ndjson when it is closed: a batch loader
// that takes *.ndjson never sees a file that still grows. Shippers that
// tail (Filebeat's filestream, Vector's file source) follow a file across
// a rename (by inode or fingerprint): give them both names, *.ndjson.part
// and *.ndjson, and they read each line once, as soon as it is written.
//
// A crash can leave the .part file of a stream with a torn last line (or,
// on some file systems, a tail of zero bytes): Start cuts it after the last
// complete line before any such damage and renames it. Those bytes were
// never acknowledged, so the collector sends them again. A tailer that read
// the torn line before the repair sees it once; shippers emit a line only
// at its newline, so most never do. Every file under a final name is whole.
//
// # Gzip files: one member per batch, renamed when complete
//
// With Config.Gzip every batch is one complete gzip member (RFC 1952
// allows a file of several members; gzip, zcat, Go's compress/gzip and the
// shippers read them as one stream), so every acknowledged batch is whole on
// disk. Readers take a .gz file as a whole, never tail it, so a file being
// written is named *.ndjson.gz.part and renamed to *.ndjson.gz when it is
// full or at Shutdown: a reader that picks up *.ndjson.gz only ever sees
// complete files, at most MaxAge after their first batch. Each member records its own length in a header extra
// field (as BGZF does), so after a crash Start walks a .part file's members
// without inflating it, checks the CRC of the last one, cuts a torn last
// member off and renames the file. Readers must not read *.part files; if
// they do, they must tolerate a truncated last member.
//
// # Retention
//
// Config.Retention (off by default: the sink cannot know what a shipper
// has read) deletes closed files: beyond max_files per stream, beyond
// max_bytes for the whole DIR (oldest first, by modification time), or
// last written more than max_age ago. It never deletes a *.part file, the
// newest closed file of a stream, or a file holding a batch of this run
// that the checkpoint has not committed: the pipeline reports commits
// (sink.CommitObserver, Committed), and a file waits until every batch in
// it is covered. Files of earlier runs wait for nothing: their records
// were either committed then or are fetched and written again now, so no
// commit depends on them. Each deleted file is first recorded, with its
// record-time range and line count, in DIR/.pruned/SOURCE/ACCOUNT.ndjson
// (under DIR/.pruned/TENANT/ for a tenant's stream; ReadPruned reads one
// tenant's) (fsynced before the file goes), which collector verify reads to report
// such days as pruned instead of gaps. Passes run after each rotation and
// commit, every minute, and at Start; each deletion counts in
// collector_sink_files_pruned_total{sink,reason} and
// collector_sink_pruned_bytes_total{sink}. Deleting a file is safe once it
// is closed and committed: the collector never reads it again. Whether a
// reader downstream has read it is the operator's to size the limits for.
//
//	write batch ──> X.ndjson.part (fsync) ──> ack ──> checkpoint commit ──> Committed(stream, next)
//	rotate ──> rename X.ndjson.part -> X.ndjson (fsync dir)           │
//	                                   retention: closed AND committed AND not newest
//	                                   ──> append DIR/.pruned line (fsync) ──> unlink X.ndjson
//
// A crash before the rename leaves X.ndjson.part: Start repairs and
// renames it. A crash between the .pruned line and the unlink leaves the
// file and its record: the next pass deletes it and records it again
// (verify counts the day pruned either way).
//
// # Errors
//
// Lifecycle and the shared collector_sink_* metrics come from package
// sinkhelper. Error kinds: invalid, open, write, sync, truncate, canceled,
// state. Only a batch that no retry can write is a permanent error
// (sink.Permanent), and the pipeline stops its stream instead of retrying:
// a batch without source or account, a source or account whose
// escaped names make a directory or file name longer than 255 bytes (or
// that the file system refuses with ENAMETOOLONG), and with format "ocsf"
// a record the mapping can never take (a source without an OCSF class). A full disk, an I/O
// error, a directory made read-only or unwritable are the machine's state,
// not the batch's: they may pass (retention frees space, an operator fixes
// the permissions), so they are retried, and /readyz reports them.
package file
