CREATE TABLE IF NOT EXISTS `svc`.`edge_audit_events`
(
    `id` String,
    `account` LowCardinality(String),
    `time` DateTime64(3, 'UTC'),
    `window_start` DateTime64(3, 'UTC'),
    `window_end` DateTime64(3, 'UTC'),
    `fetched_at` DateTime64(3, 'UTC'),
    `record` String CODEC(ZSTD(1)),
    `method` LowCardinality(String),
    `path` String,
    `response_status` Int64,
    `user_login` String,
    `client_ip` String
)
ENGINE = ReplacingMergeTree(fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (account, time, id)
SETTINGS non_replicated_deduplication_window = 1000
