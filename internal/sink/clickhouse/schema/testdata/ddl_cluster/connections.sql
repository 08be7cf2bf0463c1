CREATE TABLE IF NOT EXISTS `svc`.`connections_local` ON CLUSTER `logs`
(
    `id` String CODEC(ZSTD(1)),
    `account` LowCardinality(String),
    `time` DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    `window_start` DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    `window_end` DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    `fetched_at` DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    `record` String CODEC(ZSTD(1)),
    `record_original` Nullable(String) CODEC(ZSTD(1)),
    `tenant` LowCardinality(String),
    `src_mid` Int64 CODEC(ZSTD(1)),
    `dst_mid` Int64 CODEC(ZSTD(1)),
    `src_in_bytes` Int64 CODEC(ZSTD(1)),
    `src_out_bytes` Int64 CODEC(ZSTD(1)),
    `dst_in_bytes` Int64 CODEC(ZSTD(1)),
    `dst_out_bytes` Int64 CODEC(ZSTD(1)),
    `num_conns` Int64 CODEC(ZSTD(1)),
    `src_ips` Array(IPv6) MATERIALIZED arrayMap(e -> toIPv6OrDefault(JSONExtractString(e, 'src_ip_addr')), JSONExtractArrayRaw(record, 'endpointDetails')) CODEC(ZSTD(1)),
    `dst_ips` Array(IPv6) MATERIALIZED arrayMap(e -> toIPv6OrDefault(JSONExtractString(e, 'dst_ip_addr')), JSONExtractArrayRaw(record, 'endpointDetails')) CODEC(ZSTD(1)),
    INDEX `bf_id` `id` TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX `bf_src_ips` `src_ips` TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX `bf_dst_ips` `dst_ips` TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (tenant, account, toDate(time), src_mid, time, id)
PRIMARY KEY (tenant, account, toDate(time), src_mid)
TTL toDateTime(time) + toIntervalDay(365)
SETTINGS ttl_only_drop_parts = 1
