CREATE TABLE IF NOT EXISTS `svc`.`cloud_activities_local` ON CLUSTER `logs`
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
    `event_type` LowCardinality(String),
    `event_model` LowCardinality(String),
    `event_id` Int64 CODEC(ZSTD(1)),
    INDEX `bf_id` `id` TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX `bf_event_id` `event_id` TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (tenant, account, toDate(time), event_type, time, id)
PRIMARY KEY (tenant, account, toDate(time), event_type)
TTL toDateTime(time) + toIntervalDay(365)
SETTINGS ttl_only_drop_parts = 1
