INSERT INTO `svc`.`agent_info` (`id`, `account`, `time`, `window_start`, `window_end`, `fetched_at`, `record`, `record_original`, `mid`, `hostname`, `os`, `status`, `agent_version`)
