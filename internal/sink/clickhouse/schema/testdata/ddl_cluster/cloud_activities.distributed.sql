CREATE TABLE IF NOT EXISTS `svc`.`cloud_activities` ON CLUSTER `logs` AS `svc`.`cloud_activities_local`
ENGINE = Distributed('logs', 'svc', 'cloud_activities_local', cityHash64(id))
