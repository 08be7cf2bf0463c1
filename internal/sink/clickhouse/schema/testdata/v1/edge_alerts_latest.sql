CREATE OR REPLACE VIEW `svc`.`edge_alerts_latest` AS
SELECT
    account,
    uuid,
    latest.1 AS `id`,
    latest.2 AS `time`,
    latest.3 AS `window_start`,
    latest.4 AS `window_end`,
    latest.5 AS `fetched_at`,
    latest.6 AS `record`,
    latest.7 AS `severity`,
    latest.8 AS `status`,
    latest.9 AS `incident_status`,
    latest.10 AS `event_type`,
    latest.11 AS `update_time`
FROM
(
    SELECT
        account,
        uuid,
        argMax(tuple(`id`, `time`, `window_start`, `window_end`, `fetched_at`, `record`, `severity`, `status`, `incident_status`, `event_type`, `update_time`), tuple(update_time, fetched_at)) AS latest
    FROM `svc`.`edge_alerts`
    GROUP BY account, uuid
)
