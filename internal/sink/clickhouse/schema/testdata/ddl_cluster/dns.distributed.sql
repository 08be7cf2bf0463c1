CREATE TABLE IF NOT EXISTS `svc`.`dns` ON CLUSTER `logs` AS `svc`.`dns_local`
ENGINE = Distributed('logs', 'svc', 'dns_local', cityHash64(id))
