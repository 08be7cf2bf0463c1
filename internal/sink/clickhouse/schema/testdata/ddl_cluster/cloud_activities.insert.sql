INSERT INTO `svc`.`cloud_activities` (`id`, `account`, `time`, `window_start`, `window_end`, `fetched_at`, `record`, `record_original`, `tenant`, `event_type`, `event_model`, `event_id`)
