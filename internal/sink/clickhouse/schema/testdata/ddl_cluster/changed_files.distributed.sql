CREATE TABLE IF NOT EXISTS `svc`.`changed_files` ON CLUSTER `logs` AS `svc`.`changed_files_local`
ENGINE = Distributed('logs', 'svc', 'changed_files_local', cityHash64(id))
