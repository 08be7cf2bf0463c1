CREATE OR REPLACE VIEW `svc`.`agent_info_latest` ON CLUSTER `logs` AS
SELECT
    tenant,
    account,
    mid,
    argMax(`v_id`, v) AS `id`,
    argMax(`v_time`, v) AS `time`,
    argMax(`v_window_start`, v) AS `window_start`,
    argMax(`v_window_end`, v) AS `window_end`,
    argMax(`v_fetched_at`, v) AS `fetched_at`,
    argMax(`v_record`, v) AS `record`,
    argMax(`v_record_original`, v) AS `record_original`,
    argMax(`v_hostname`, v) AS `hostname`,
    argMax(`v_os`, v) AS `os`,
    argMax(`v_status`, v) AS `status`,
    argMax(`v_agent_version`, v) AS `agent_version`,
    argMax(`v_ip_addr`, v) AS `ip_addr`,
    argMax(`v_last_update`, v) AS `last_update`
FROM
(
    SELECT
        tenant,
        account,
        mid,
        (time, last_update, fetched_at, id) AS v,
        `id` AS `v_id`,
        `time` AS `v_time`,
        `window_start` AS `v_window_start`,
        `window_end` AS `v_window_end`,
        `fetched_at` AS `v_fetched_at`,
        `record` AS `v_record`,
        `record_original` AS `v_record_original`,
        `hostname` AS `v_hostname`,
        `os` AS `v_os`,
        `status` AS `v_status`,
        `agent_version` AS `v_agent_version`,
        `ip_addr` AS `v_ip_addr`,
        `last_update` AS `v_last_update`
    FROM `svc`.`agent_info`
)
GROUP BY tenant, account, mid
