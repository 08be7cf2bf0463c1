INSERT INTO `svc`.`edge_alerts` (`id`, `account`, `time`, `window_start`, `window_end`, `fetched_at`, `record`, `uuid`, `severity`, `status`, `incident_status`, `event_type`, `update_time`)
