INSERT INTO `svc`.`dns` (`id`, `account`, `time`, `window_start`, `window_end`, `fetched_at`, `record`, `record_original`, `tenant`, `mid`, `fqdn`, `host_ip_addr`)
