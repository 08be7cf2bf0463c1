CREATE TABLE IF NOT EXISTS `svc`.`edge_alerts` ON CLUSTER `logs` AS `svc`.`edge_alerts_local`
ENGINE = Distributed('logs', 'svc', 'edge_alerts_local', cityHash64(id))
