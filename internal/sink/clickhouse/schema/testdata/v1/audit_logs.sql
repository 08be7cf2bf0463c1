CREATE TABLE IF NOT EXISTS `svc`.`audit_logs`
(
    `id` String,
    `account` LowCardinality(String),
    `time` DateTime64(3, 'UTC'),
    `window_start` DateTime64(3, 'UTC'),
    `window_end` DateTime64(3, 'UTC'),
    `fetched_at` DateTime64(3, 'UTC'),
    `record` String CODEC(ZSTD(1)),
    `account_name` String,
    `user_name` String,
    `event_name` LowCardinality(String),
    `user_action` LowCardinality(String)
)
ENGINE = ReplacingMergeTree(fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (account, time, id)
SETTINGS non_replicated_deduplication_window = 1000
