INSERT INTO `svc`.`edge_audit_events` (`id`, `account`, `time`, `window_start`, `window_end`, `fetched_at`, `record`, `method`, `path`, `response_status`, `user_login`, `client_ip`)
