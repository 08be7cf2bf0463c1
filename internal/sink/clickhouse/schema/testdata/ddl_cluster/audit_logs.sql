CREATE TABLE IF NOT EXISTS `svc`.`audit_logs_local` ON CLUSTER `logs`
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
    `account_name` LowCardinality(String),
    `user_name` String CODEC(ZSTD(1)),
    `event_name` LowCardinality(String),
    `user_action` LowCardinality(String),
    INDEX `bf_id` `id` TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX `bf_user_name` `user_name` TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (tenant, account, toDate(time), user_name, time, id)
PRIMARY KEY (tenant, account, toDate(time), user_name)
TTL toDateTime(time) + toIntervalDay(365)
SETTINGS ttl_only_drop_parts = 1
