// Package kafka is the Kafka sink (DESIGN item 6): it writes each envelope
// (CONTRACT C7) as one Kafka record with franz-go's idempotent producer.
//
// A record's key is chosen per source (Config.KeyOf): the envelope id, so
// that a consumer (or a compacted topic) merges copies by the record's
// identity (with delivery exactly_once, the default, the sink's ledger
// writes none: see Recover; at_least_once may write some after a crash),
// or the record's account and entity
// (kafkarecord.EntityKey; by default for agent_info and edge_alerts, the
// id then in the header "id"), so a compacted topic keeps each agent's or
// alert's latest record. Its headers are
// source, account, time, window_start, window_end and fetched_at (RFC 3339
// with milliseconds, UTC) and content-type: application/json. Its value is
// the envelope JSON (format "envelope", the default), the raw record as
// the API sent it (format "record"), or the record's OCSF 1.3.0 event
// (format "ocsf", package ocsf; content-type then
// kafkarecord.ContentTypeOCSF, values that do not fit the schema counted
// in collector_ocsf_fallbacks_total{source}). The record's Kafka timestamp
// is its record time (Config.Timestamp "record", the default) or when its
// page was fetched ("fetched", for topics whose retention would delete a
// backfill at once). Topics come from a template (default "svc.{source}").
//
// Write returns nil only when every record of the batch is acknowledged by
// all in-sync replicas. A record too large for its topic can never succeed:
// it goes to the dead-letter file (DeadLetterFile in the directory given to
// New, fsynced) with its reason, is counted in
// collector_dead_letters_total{sink="kafka"}, and the rest of the batch
// goes on. Anything else that fails makes Write return an error, and the
// pipeline writes the whole batch again later, unless the error is
// permanent.
//
// # Permanent errors
//
// Write marks an error permanent (sink.Permanent: the pipeline stops the
// stream instead of retrying; a restart after the fix writes the batch)
// when the cluster's answer concerns the records or their topic and no
// repeat can change it without an operator changing the cluster:
// TOPIC_AUTHORIZATION_FAILED and CLUSTER_AUTHORIZATION_FAILED (the ACLs
// refuse this principal the topic; franz-go does not retry them either),
// INVALID_TOPIC_EXCEPTION and POLICY_VIOLATION, INVALID_PARTITIONS and
// INVALID_REPLICATION_FACTOR when creating a topic, INVALID_RECORD, a
// topic that does not exist while create_topics is off, and (format
// "ocsf", kind invalid) a record the mapping can never take, a source
// without an OCSF class. A record too large
// for its topic is no error at all: it is dead-lettered. Everything that
// may pass is retried: lost connections, timeouts, leader elections,
// NOT_ENOUGH_REPLICAS, an UNKNOWN_TOPIC_OR_PARTITION met while producing
// (partitions move), and SASL authentication failures (a credential that
// reaches the brokers one by one after a change).
//
// # A topic deleted and recreated
//
// franz-go keeps the id of the topic it first produced to and refuses the
// recreated topic (UNKNOWN_TOPIC_ID) until the topic is purged from the
// client. Write purges it, once per recreation however many Writes see
// it, and produces the refused records again, within the same Write: the
// first Write after a recreation is acknowledged by the new topic after
// one franz-go metadata refresh (about 5 s), and the records of a Write
// that met the topic missing wait in the producer, or fail the Write (not
// permanently), until the topic is back. Nothing is acknowledged that the
// new topic does not hold; what the old topic held is gone with it.
//
// # Transactions
//
// With sink.kafka.transactional_id set (delivery exactly_once; empty by
// default) each Write is one transaction: begin, produce the batch,
// commit. A read_committed consumer sees a batch whole or not at all; a
// Write a record of which fails is aborted whole and retried, so a
// partial batch never lands; a crash mid-Write leaves an open
// transaction that Recover aborts by fencing the id (InitProducerID)
// before it reads back, which also stops a zombie of the dead process
// from committing anything more. Writes of different streams take turns
// (one open transaction per producer): BenchmarkWrite measured 127,000
// records per CPU-second with transactions against 146,000 without, in
// process (kfake), pages of 5,000 records.
//
// Kafka Connect's exactly-once sources (KIP-618) commit the source's
// progress in the same transaction as the records. Here the progress
// lives in the bbolt checkpoint, and the read-back stands in for that
// atomicity: a crash between a Kafka commit and the checkpoint commit
// leaves committed records past the mark, which the next start reads back
// (read_committed) and does not write again, so the log holds them once,
// as if the progress had been committed with them. What it does not give
// that KIP-618 gives: the read-back costs a read of the partitions' tails
// at start, and a commit whose outcome the sink never learnt (the EndTxn
// answer lost) is retried within the run, which may commit the batch
// twice; only a restart's read-back would have caught it.
//
// Transactions need brokers that offer them (Kafka 0.11+, the
// transaction state topic) and, with ACLs, WRITE and DESCRIBE on the
// transactional id (IDEMPOTENT_WRITE on the cluster before Kafka 3.0).
// Refused, Recover stops the start with an error naming
// sink.kafka.transactional_id. Two collectors must never share an id: the
// one that starts fences the other, whose Writes fail from then on.
//
// TLS comes from package tlsconfig; SASL (PLAIN, SCRAM-SHA-256/512,
// OAUTHBEARER with a token, a token file or a client-credentials grant,
// AWS_MSK_IAM) from package kafkasasl, with franz-go's mechanisms.
//
// Lifecycle, the shared collector_sink_* metrics and the dead-letter file
// come from package sinkhelper; errors are counted by kind (too_large,
// timeout, canceled, auth, unknown_topic, broker, closed, other,
// dead_letter, invalid, state).
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
