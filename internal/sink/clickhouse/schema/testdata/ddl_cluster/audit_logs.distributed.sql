CREATE TABLE IF NOT EXISTS `svc`.`audit_logs` ON CLUSTER `logs` AS `svc`.`audit_logs_local`
ENGINE = Distributed('logs', 'svc', 'audit_logs_local', cityHash64(id))
