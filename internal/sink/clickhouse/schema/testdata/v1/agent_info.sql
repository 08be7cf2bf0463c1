CREATE TABLE IF NOT EXISTS `svc`.`agent_info`
(
    `id` String,
    `account` LowCardinality(String),
    `time` DateTime64(3, 'UTC'),
    `window_start` DateTime64(3, 'UTC'),
    `window_end` DateTime64(3, 'UTC'),
    `fetched_at` DateTime64(3, 'UTC'),
    `record` String CODEC(ZSTD(1)),
    `mid` Int64,
    `hostname` String,
    `os` LowCardinality(String),
    `status` LowCardinality(String),
    `agent_version` LowCardinality(String)
)
ENGINE = ReplacingMergeTree(fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (account, time, id)
SETTINGS non_replicated_deduplication_window = 1000
