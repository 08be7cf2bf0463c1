INSERT INTO `svc`.`changed_files` (`id`, `account`, `time`, `window_start`, `window_end`, `fetched_at`, `record`, `record_original`, `tenant`, `mid`, `file_path`, `filedata_hash`, `size`)
