// Package kafka is the Kafka sink (DESIGN item 6): it writes each envelope
// (CONTRACT C7) as one Kafka record with franz-go's idempotent producer.
//
// A record's key is the envelope id, so a consumer (or a compacted topic)
// removes the duplicates that at-least-once delivery brings. Its headers are
// source, account, time, window_start, window_end and fetched_at (RFC 3339
// with milliseconds, UTC) and content-type: application/json. Its value is
// the envelope JSON (format "envelope", the default) or the raw record as
// the API sent it (format "record"). The record's Kafka timestamp is the
// time it was produced, not the record time: backfilled records would
// otherwise fall under the topic's retention at once. Topics come from a
// template (default "svc.{source}").
//
// Write returns nil only when every record of the batch is acknowledged by
// all in-sync replicas. A record too large for its topic can never succeed:
// it goes to the dead-letter file (DeadLetterFile in the directory given to
// New, fsynced) with its reason, is counted in
// collector_dead_letters_total{sink="kafka"}, and the rest of the batch
// goes on. Anything else that fails makes Write return an error, and the
// pipeline writes the whole batch again later.
//
// Defaults come from BenchmarkWrite on the project's 2-core machines (see
// bench_test.go and Config): zstd at its fastest level (7x smaller than the
// envelopes for about 3.4 CPU-seconds per million records, which is some
// 300,000 records per second per core on the producer side), a 10 ms
// linger that Write cuts short once a page is buffered, 1,000,012-byte
// batches and 50,000 buffered records.
//
// The package knows envelopes and batches (package record) and nothing of
// the API, windows or the checkpoint. It must not import internal/source,
// internal/checkpoint or internal/pipeline.
package kafka
