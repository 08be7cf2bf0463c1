ALTER TABLE `svc`.`dns_local` ON CLUSTER `logs` ADD COLUMN IF NOT EXISTS `record_original` Nullable(String) CODEC(ZSTD(1))
ALTER TABLE `svc`.`dns_local` ON CLUSTER `logs` MODIFY COLUMN `host_ip_addr` Nullable(IPv6) CODEC(ZSTD(1))
ALTER TABLE `svc`.`dns_local` ON CLUSTER `logs` MODIFY COLUMN `id` CODEC(ZSTD(1)), MODIFY COLUMN `time` CODEC(Delta(8), ZSTD(1)), MODIFY COLUMN `fqdn` CODEC(ZSTD(1))
ALTER TABLE `svc`.`dns_local` ON CLUSTER `logs` ADD INDEX IF NOT EXISTS `bf_id` `id` TYPE bloom_filter(0.01) GRANULARITY 1, ADD INDEX IF NOT EXISTS `bf_fqdn` `fqdn` TYPE bloom_filter(0.01) GRANULARITY 1, ADD INDEX IF NOT EXISTS `bf_host_ip_addr` `host_ip_addr` TYPE bloom_filter(0.01) GRANULARITY 1
ALTER TABLE `svc`.`dns_local` ON CLUSTER `logs` MATERIALIZE INDEX `bf_id`, MATERIALIZE INDEX `bf_fqdn`, MATERIALIZE INDEX `bf_host_ip_addr`
ALTER TABLE `svc`.`dns_local` ON CLUSTER `logs` MODIFY SETTING ttl_only_drop_parts = 1
ALTER TABLE `svc`.`dns_local` ON CLUSTER `logs` MODIFY TTL toDateTime(time) + toIntervalDay(365)
ALTER TABLE `svc`.`dns` ON CLUSTER `logs` ADD COLUMN IF NOT EXISTS `record_original` Nullable(String)
ALTER TABLE `svc`.`dns` ON CLUSTER `logs` MODIFY COLUMN `host_ip_addr` Nullable(IPv6)
