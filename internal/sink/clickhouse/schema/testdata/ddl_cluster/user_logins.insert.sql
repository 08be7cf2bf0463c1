INSERT INTO `svc`.`user_logins` (`id`, `account`, `time`, `window_start`, `window_end`, `fetched_at`, `record`, `record_original`, `tenant`, `mid`, `username`, `activity_type`, `source_ip_addr`)
