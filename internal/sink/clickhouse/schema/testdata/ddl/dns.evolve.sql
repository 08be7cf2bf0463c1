ALTER TABLE `svc`.`dns` ADD COLUMN IF NOT EXISTS `record_original` Nullable(String) CODEC(ZSTD(1))
ALTER TABLE `svc`.`dns` MODIFY COLUMN `host_ip_addr` Nullable(IPv6) CODEC(ZSTD(1))
ALTER TABLE `svc`.`dns` MODIFY COLUMN `id` CODEC(ZSTD(1)), MODIFY COLUMN `time` CODEC(Delta(8), ZSTD(1)), MODIFY COLUMN `fqdn` CODEC(ZSTD(1))
ALTER TABLE `svc`.`dns` ADD INDEX IF NOT EXISTS `bf_id` `id` TYPE bloom_filter(0.01) GRANULARITY 1, ADD INDEX IF NOT EXISTS `bf_fqdn` `fqdn` TYPE bloom_filter(0.01) GRANULARITY 1, ADD INDEX IF NOT EXISTS `bf_host_ip_addr` `host_ip_addr` TYPE bloom_filter(0.01) GRANULARITY 1
ALTER TABLE `svc`.`dns` MATERIALIZE INDEX `bf_id`, MATERIALIZE INDEX `bf_fqdn`, MATERIALIZE INDEX `bf_host_ip_addr`
ALTER TABLE `svc`.`dns` MODIFY SETTING ttl_only_drop_parts = 1
ALTER TABLE `svc`.`dns` MODIFY TTL toDateTime(time) + toIntervalDay(365)
ALTER TABLE `svc`.`dns` MODIFY SETTING non_replicated_deduplication_window = 1000
