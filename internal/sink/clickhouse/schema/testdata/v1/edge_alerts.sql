CREATE TABLE IF NOT EXISTS `svc`.`edge_alerts`
(
    `id` String,
    `account` LowCardinality(String),
    `time` DateTime64(3, 'UTC'),
    `window_start` DateTime64(3, 'UTC'),
    `window_end` DateTime64(3, 'UTC'),
    `fetched_at` DateTime64(3, 'UTC'),
    `record` String CODEC(ZSTD(1)),
    `uuid` String,
    `severity` LowCardinality(String),
    `status` LowCardinality(String),
    `incident_status` LowCardinality(String),
    `event_type` LowCardinality(String),
    `update_time` DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (account, time, id)
SETTINGS non_replicated_deduplication_window = 1000
