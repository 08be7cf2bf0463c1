CREATE TABLE IF NOT EXISTS `svc`.`edge_audit_events` ON CLUSTER `logs` AS `svc`.`edge_audit_events_local`
ENGINE = Distributed('logs', 'svc', 'edge_audit_events_local', cityHash64(id))
