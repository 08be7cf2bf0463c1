// Package schema is what the ClickHouse sink's tables look like and how
// they come to be: one table per source with the envelope's columns and
// typed columns read from the record (Tables), the DDL built from them
// (pinned by the golden files in testdata/ddl and testdata/ddl_cluster),
// and Ensure, which creates or completes the database, the tables and the
// view on a server, and Check, which only looks.
//
// It knows table specifications and a driver connection, nothing of
// batches, inserts or the sink's lifecycle.
//
// # Tables
//
// Ensure creates the database (default "svc") and one table per source
// (changed_files, connections, dns, user_logins, cloud_activities,
// audit_logs, agent_info, edge_audit_events, edge_alerts, each behind
// sink.clickhouse.table_prefix) with CREATE TABLE IF NOT EXISTS. Every table
// has the envelope's columns (CONTRACT C7): id String, account
// LowCardinality(String), time, window_start, window_end and fetched_at as
// DateTime64(3, 'UTC') with CODEC(Delta(8), ZSTD(1)), record String
// CODEC(ZSTD(1)) holding the record byte for byte, record_original
// Nullable(String) (the bytes of a record received with a flaw); then
// typed columns read from the record (Tables says which), LowCardinality
// where values repeat, ZSTD(1) otherwise, and bloom_filter skip indexes on
// the columns searched for (the id, IPs, hashes). The connections table
// also has src_ips and dst_ips, Array(IPv6): the two ends of each element
// of the record's endpointDetails, which the server computes from the
// record column (MATERIALIZED; Table.Derived), so that "who talked to
// 1.2.3.4" is has(dst_ips, toIPv6('1.2.3.4')) and needs no JSON.
//
// The engine is ReplacingMergeTree(fetched_at), PARTITION BY
// toYYYYMM(time), ORDER BY (tenant, account, toDate(time), KEY, time, id)
// (tenant: the configured tenant, "" in the one-tenant form) where KEY
// is the column queries of the source name (Table.Key: the user name, the
// FQDN, the alert's uuid; Table.SortingKey says why). A record written
// twice (at least once, C7) is one row after a merge, and at once with
// FINAL:
//
//	SELECT count() FROM svc.dns FINAL
//
// sink.clickhouse.ttl (Options.TTL) adds TTL toDateTime(time) +
// toIntervalDay(N) with ttl_only_drop_parts; sink.clickhouse.cluster
// (Options.Cluster) makes the tables ReplicatedReplacingMergeTree tables
// NAME_local and Distributed tables NAME over them, created ON CLUSTER.
//
// The view edge_alerts_latest holds the latest version (greatest
// update_time) of each edge alert per account and uuid, the view
// agent_info_latest the newest record (greatest record time) of each agent
// per account and mid: the current fleet.
//
// # Evolution
//
// A table of an older schema gets what can be done in place (evolve.go):
// the columns it lacks (ALTER TABLE ADD COLUMN IF NOT EXISTS; rows inserted
// before read the column's default, or, for a derived column, its value
// computed from their record, which ALTER TABLE MATERIALIZE COLUMN then
// stores in the background), the codecs of columns that have none,
// the skip indexes (built for older parts by a background mutation), the
// configured TTL and insert deduplication, and the String columns in which
// earlier versions kept IP addresses and severities, converted to their
// native types (ALTER TABLE MODIFY COLUMN; a value that does not parse
// becomes NULL, so the conversion cannot fail on a row). What cannot is logged as a
// warning naming the table: a sorting key of its own (with the statements
// that migrate the table), a codec somebody chose, LowCardinality or not,
// a TTL set by hand while sink.clickhouse.ttl is off. A column whose type
// cannot take the sink's values is an error of Ensure naming table,
// column, found and expected type. Columns of the table that the sink does
// not know are left alone (they need defaults).
package schema
