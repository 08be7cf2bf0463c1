CREATE TABLE IF NOT EXISTS `svc`.`dns`
(
    `id` String,
    `account` LowCardinality(String),
    `time` DateTime64(3, 'UTC'),
    `window_start` DateTime64(3, 'UTC'),
    `window_end` DateTime64(3, 'UTC'),
    `fetched_at` DateTime64(3, 'UTC'),
    `record` String CODEC(ZSTD(1)),
    `mid` Int64,
    `fqdn` String,
    `host_ip_addr` String
)
ENGINE = ReplacingMergeTree(fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (account, time, id)
SETTINGS non_replicated_deduplication_window = 1000
