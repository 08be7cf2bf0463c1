CREATE TABLE IF NOT EXISTS `svc`.`connections`
(
    `id` String,
    `account` LowCardinality(String),
    `time` DateTime64(3, 'UTC'),
    `window_start` DateTime64(3, 'UTC'),
    `window_end` DateTime64(3, 'UTC'),
    `fetched_at` DateTime64(3, 'UTC'),
    `record` String CODEC(ZSTD(1)),
    `src_mid` Int64,
    `dst_mid` Int64,
    `src_in_bytes` Int64,
    `src_out_bytes` Int64,
    `dst_in_bytes` Int64,
    `dst_out_bytes` Int64,
    `num_conns` Int64
)
ENGINE = ReplacingMergeTree(fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (account, time, id)
SETTINGS non_replicated_deduplication_window = 1000
