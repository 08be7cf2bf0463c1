CREATE OR REPLACE VIEW `svc`.`edge_alerts_latest` ON CLUSTER `logs` AS
SELECT
    tenant,
    account,
    uuid,
    argMax(`v_id`, v) AS `id`,
    argMax(`v_time`, v) AS `time`,
    argMax(`v_window_start`, v) AS `window_start`,
    argMax(`v_window_end`, v) AS `window_end`,
    argMax(`v_fetched_at`, v) AS `fetched_at`,
    argMax(`v_record`, v) AS `record`,
    argMax(`v_record_original`, v) AS `record_original`,
    argMax(`v_severity`, v) AS `severity`,
    argMax(`v_status`, v) AS `status`,
    argMax(`v_incident_status`, v) AS `incident_status`,
    argMax(`v_event_type`, v) AS `event_type`,
    argMax(`v_update_time`, v) AS `update_time`
FROM
(
    SELECT
        tenant,
        account,
        uuid,
        (update_time, fetched_at, id) AS v,
        `id` AS `v_id`,
        `time` AS `v_time`,
        `window_start` AS `v_window_start`,
        `window_end` AS `v_window_end`,
        `fetched_at` AS `v_fetched_at`,
        `record` AS `v_record`,
        `record_original` AS `v_record_original`,
        `severity` AS `v_severity`,
        `status` AS `v_status`,
        `incident_status` AS `v_incident_status`,
        `event_type` AS `v_event_type`,
        `update_time` AS `v_update_time`
    FROM `svc`.`edge_alerts`
)
GROUP BY tenant, account, uuid
