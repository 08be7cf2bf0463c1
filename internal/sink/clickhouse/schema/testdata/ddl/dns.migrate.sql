RENAME TABLE `svc`.`dns` TO `svc`.`dns_v1`
INSERT INTO `svc`.`dns` (`id`, `account`, `time`, `window_start`, `fetched_at`, `record`, `tenant`, `mid`, `fqdn`, `host_ip_addr`) SELECT `id`, `account`, `time`, `window_start`, `fetched_at`, `record`, `tenant`, `mid`, `fqdn`, `host_ip_addr` FROM `svc`.`dns_v1`
DROP TABLE `svc`.`dns_v1`
