CREATE TABLE IF NOT EXISTS `svc`.`edge_alerts`
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
    `uuid` String CODEC(ZSTD(1)),
    `severity` Nullable(UInt8) CODEC(ZSTD(1)),
    `status` LowCardinality(String),
    `incident_status` LowCardinality(String),
    `event_type` LowCardinality(String),
    `update_time` DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    INDEX `bf_id` `id` TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX `bf_uuid` `uuid` TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (tenant, account, toDate(time), uuid, time, id)
PRIMARY KEY (tenant, account, toDate(time), uuid)
SETTINGS non_replicated_deduplication_window = 1000
