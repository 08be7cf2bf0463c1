CREATE TABLE IF NOT EXISTS `svc`.`user_logins` ON CLUSTER `logs` AS `svc`.`user_logins_local`
ENGINE = Distributed('logs', 'svc', 'user_logins_local', cityHash64(id))
