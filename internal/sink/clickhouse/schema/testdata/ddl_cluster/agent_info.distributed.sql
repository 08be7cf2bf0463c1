CREATE TABLE IF NOT EXISTS `svc`.`agent_info` ON CLUSTER `logs` AS `svc`.`agent_info_local`
ENGINE = Distributed('logs', 'svc', 'agent_info_local', cityHash64(id))
