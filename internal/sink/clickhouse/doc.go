// Package clickhouse is the ClickHouse sink: one table per source, typed
// columns pulled out of each record next to the raw record, batched inserts
// that a retry cannot store twice, over the native or the HTTP protocol
// (github.com/ClickHouse/clickhouse-go/v2).
//
// # Tables
//
// Start creates the database (default "svc") and one table per source when
// missing, and completes tables of an older schema; package schema says
// what the tables look like (the envelope's columns, typed columns read
// from the record, ReplacingMergeTree keyed by the C7 id, so that a record
// stored twice where once cannot be promised, delivery at_least_once or a
// cluster, is one row after a merge) and how they evolve. With delivery
// exactly_once (the default on one server) a start reads back the rows
// inserted past the checkpoint, and the pipeline writes them no more.
//
// A typed column takes its default (empty string, 0, 1970-01-01) when the
// record lacks the member or holds a value of another type (a number sent
// as a string for an Int64 column, an object for a String column); the raw
// record keeps whatever came. String columns take numbers and booleans as
// their literal text, since edge enumerations are integers. IP addresses
// are Nullable(IPv6) (IPv4 v4-mapped) and an alert's severity
// Nullable(UInt8): what is no address (a host name, a zone, a port, "") or
// no integer from 0 to 255 is NULL, so a bad value never fails an insert.
//
// # Inserts
//
// Write turns its batch into columns (in the calling goroutine) and hands
// them to its table's insert loop, which concatenates the batches of
// several Writes, in the order they came, until batch_rows rows or
// batch_bytes bytes or until the oldest waited flush_interval, and sends
// them as one insert (PrepareBatch, appending whole columns, a block at a
// time: see Memory). A batch that alone passes batch_rows or batch_bytes
// goes in parts, consecutive runs of its rows, one insert after the
// other. Write returns nil only after
// the server confirmed every insert that held its rows; when one fails,
// every Write whose rows it held gets the error and the rest of a batch
// in parts is not sent (but see Permanent errors).
//
// Each insert carries insert_deduplication_token, the SHA-256 of the table
// name and its ids in order, and every table has
// non_replicated_deduplication_window = DedupWindow: an insert repeated
// after a time-out or a lost connection, whose first try the server may
// well have stored, is stored once. The sink repeats a failed insert itself
// (insert_attempts, same rows, same token) before it fails the Writes,
// because after a failed Write the pipeline may group the rows differently,
// and then only ReplacingMergeTree removes the duplicates (at merge, or
// with FINAL).
//
// # Permanent errors
//
// Write marks an error permanent (sink.Permanent: the pipeline stops the
// stream instead of retrying; a restart after the fix writes the batch)
// when the server refuses the insert's statement or rows and will refuse
// every repeat until an operator changes the table or the grants: an
// unknown table, column or database (Start creates them, so this is a
// table dropped or changed under the running sink), a value the column
// cannot take (TYPE_MISMATCH, CANNOT_PARSE_TEXT, CANNOT_CONVERT_TYPE, the
// driver's own conversion error), a violated constraint, and ACCESS_DENIED,
// a grant the user lacks on the table; also a batch of a source without a
// table. Such an insert is not repeated. When it held the rows of several
// Writes, each Write's rows are inserted alone, so that only a Write whose
// own rows are refused fails for good. A refused login (WRONG_PASSWORD,
// AUTHENTICATION_FAILED, UNKNOWN_USER) is not permanent: it concerns the
// connection, not the batch, and passes when a rotated password reaches
// every server; like time-outs, lost connections and overload it is
// retried (the insert loop does not repeat it at once, the pipeline does).
//
// Lifecycle and the shared collector_sink_* metrics come from package
// sinkhelper; errors are counted by kind (insert, timeout, source, state,
// canceled).
//
// # Server versions
//
// The oldest supported server is MinServerVersion, 24.8 (an LTS release);
// Start refuses older ones with an error naming both versions. The features
// relied on (insert_deduplication_token on non-replicated MergeTree tables
// with non_replicated_deduplication_window, async_insert_deduplicate,
// DateTime64, LowCardinality, ZSTD codecs, CREATE OR REPLACE VIEW, ALTER
// TABLE ADD COLUMN IF NOT EXISTS) are all older than 24.8, and it is the
// oldest release line we would still call maintained; only 26.7 is tested
// (the engine of @chdb/lib-linux-x64-gnu that cmd/chserver serves).
//
// # Throughput
//
// BenchmarkInsert (bench_test.go) writes 5,000-row pages of connections
// records (about 480 bytes of JSON each) through Write into inserts of
// 10,000, 50,000 and 100,000 rows, against the chdb 26.7 server on the
// same 2-core machine, and reports rows per second of wall time and per
// CPU second of the collector and of the server. Measured 2026-11-22
// (three runs of ten inserts each, machine shared with other work):
//
//	                 rows/s (wall)   rows per CPU-s (collector + server)
//	native  10,000   81k-138k        123k-134k
//	native  50,000   152k-162k       156k-162k
//	native 100,000   61k-134k        135k-161k
//	http    10,000   133k-146k       136k-149k
//	http    50,000   77k-166k        141k-154k
//	http   100,000   153k-173k       148k-150k
//
// The collector alone spends one CPU second per 250k-320k rows, the server
// one per 240k-370k. Per CPU second 50,000-row inserts beat 10,000-row
// ones by about a fifth over native and match them over HTTP, and 100,000
// rows gain nothing more while holding twice the memory.
//
// Appending whole columns instead of rows (BenchmarkAppendStyle) is about
// 1.6 times faster.
//
// # Memory
//
// What the sink holds beyond the pipeline's buffer (whose envelopes its
// chunks share) is the typed values it pulls out of each Write's records
// and the driver's copy of each insert in flight: the block's columns,
// the encoded block and its compressed form, about three times a block's
// bytes. Over the native protocol an insert goes in blocks of about 256
// KiB, each sent (a data packet of the same insert, same token) before
// the next is appended; the server gathers them into one block, so the
// insert is stored and deduplicated as one. Over HTTP the driver sends an
// insert in one body and holds it whole: about three times the insert,
// at most batch_bytes (and batch_rows). At most one insert runs per
// table, and each holds the rows of at least one waiting Write, so at
// most pipeline.sink_workers run at once: the driver's share is about 3 x
// 256 KiB x min(sink_workers, 9) over native, 3 x batch_bytes x
// min(sink_workers, 9) over HTTP. A connection back in the pool drops its buffers
// (clickhouse-go's FreeBufOnConnRelease): before that, each of up to 5
// idle connections kept buffers as large as the largest insert it had
// sent. Before batch_bytes (issue 24) an insert was bounded by batch_rows
// alone and a batch was never split. A backfill of 2 days of nine sources
// of three accounts (internal/bench BenchmarkSinkMemory, 2026-11-29)
// peaked at 276-301 MiB resident before and 208 MiB after at a tenth of
// the scale (the file sink: 173-189 MiB), and at 673 MiB before and 578
// MiB after at full scale (2.6 million records; the file sink 643 MiB:
// there the checkpoint dominates). Before the blocks (issue 30, round 3)
// native inserts were held whole too: the full-scale backfill peaked at
// 182 MiB (2026-12-06), 143 MiB with 1 MiB blocks and 131 MiB with 256
// KiB ones. docs/performance.md, "Memory", has the figures by setting.
//
// # Metrics
//
// Besides the shared collector_sink_* series (package sinkhelper, sink
// "clickhouse"; its bytes counter holds the uncompressed estimate below):
// collector_clickhouse_rows_inserted_total{table},
// collector_clickhouse_bytes_inserted_total{table} (uncompressed: raw
// records, strings, 8 bytes a number or time),
// collector_clickhouse_inserts_total{table},
// collector_clickhouse_insert_duration_seconds{table} (each attempt),
// collector_clickhouse_insert_errors_total{table} (each failed attempt) and
// collector_clickhouse_rows_per_insert.
//
// Tenants: every table has a tenant column ("" in the one-tenant form),
// first in the sorting key of new tables and appended to the key of older
// ones at start (metadata only), and the insert's deduplication token
// names each part's tenant, so two tenants' identical records stay two
// rows and neither insert passes for a repeat of the other.
package clickhouse
