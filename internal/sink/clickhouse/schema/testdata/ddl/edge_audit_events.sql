CREATE TABLE IF NOT EXISTS `svc`.`edge_audit_events`
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
    `method` LowCardinality(String),
    `path` String CODEC(ZSTD(1)),
    `response_status` Int64 CODEC(ZSTD(1)),
    `user_login` String CODEC(ZSTD(1)),
    `client_ip` Nullable(IPv6) CODEC(ZSTD(1)),
    INDEX `bf_id` `id` TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX `bf_user_login` `user_login` TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX `bf_client_ip` `client_ip` TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (tenant, account, toDate(time), user_login, time, id)
PRIMARY KEY (tenant, account, toDate(time), user_login)
SETTINGS non_replicated_deduplication_window = 1000
