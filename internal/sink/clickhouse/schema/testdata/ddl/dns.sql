CREATE TABLE IF NOT EXISTS `svc`.`dns`
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
    `mid` Int64 CODEC(ZSTD(1)),
    `fqdn` String CODEC(ZSTD(1)),
    `host_ip_addr` Nullable(IPv6) CODEC(ZSTD(1)),
    INDEX `bf_id` `id` TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX `bf_fqdn` `fqdn` TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX `bf_host_ip_addr` `host_ip_addr` TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(fetched_at)
PARTITION BY toYYYYMM(time)
ORDER BY (tenant, account, toDate(time), fqdn, time, id)
PRIMARY KEY (tenant, account, toDate(time), fqdn)
SETTINGS non_replicated_deduplication_window = 1000
