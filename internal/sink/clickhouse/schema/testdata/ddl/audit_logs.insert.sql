INSERT INTO `svc`.`audit_logs` (`id`, `account`, `time`, `window_start`, `window_end`, `fetched_at`, `record`, `record_original`, `tenant`, `account_name`, `user_name`, `event_name`, `user_action`)
