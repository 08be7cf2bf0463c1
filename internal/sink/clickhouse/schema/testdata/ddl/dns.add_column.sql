ALTER TABLE `svc`.`dns` ADD COLUMN IF NOT EXISTS `host_ip_addr` String
ALTER TABLE `svc`.`dns` MODIFY SETTING non_replicated_deduplication_window = 1000
