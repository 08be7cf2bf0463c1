CREATE TABLE IF NOT EXISTS `svc`.`connections` ON CLUSTER `logs` AS `svc`.`connections_local`
ENGINE = Distributed('logs', 'svc', 'connections_local', cityHash64(id))
