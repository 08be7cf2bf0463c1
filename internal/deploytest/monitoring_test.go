package deploytest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestAlertRulesAreCompleteAndExplained(t *testing.T) {
	rules := alertRules(t)
	byName := map[string]map[string]any{}
	for _, r := range rules {
		name := str(r, "alert")
		if name == "" {
			t.Errorf("alerts.yaml: a rule without alert name (recording rules belong elsewhere): %v", r)
			continue
		}
		byName[name] = r
		if strings.TrimSpace(str(r, "expr")) == "" {
			t.Errorf("%s: no expr", name)
		}
		if s := str(r, "labels.severity"); s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q, want warning or critical", name, s)
		}
		for _, a := range []string{"summary", "description", "runbook"} {
			if len(strings.TrimSpace(str(r, "annotations."+a))) < 20 {
				t.Errorf("%s: annotation %s is missing or too short to help", name, a)
			}
		}
		if strings.Count(str(r, "expr"), "(") != strings.Count(str(r, "expr"), ")") ||
			strings.Count(str(r, "expr"), "{") != strings.Count(str(r, "expr"), "}") {
			t.Errorf("%s: unbalanced brackets in %q", name, str(r, "expr"))
		}
	}
	// What the alerts must cover, by the metric each is built on.
	for name, metric := range map[string]string{
		"CollectorDown":                     `up{job="collector"}`,
		"CollectorFreshnessLag":             "collector_watermark_lag_seconds",
		"CollectorRateLimited":              "collector_rate_limited_total",
		"CollectorSinkWriteFailures":        "collector_sink_errors_total",
		"CollectorNoProgress":               "collector_rows_delivered_total",
		"CollectorCheckpointCommitFailures": "collector_checkpoint_commit_errors_total",
		"CollectorDeadLetters":              "collector_dead_letters_total",
	} {
		r := byName[name]
		if r == nil {
			t.Errorf("alerts.yaml: no alert %s", name)
			continue
		}
		if !strings.Contains(str(r, "expr"), metric) {
			t.Errorf("%s: expr %q does not use %s", name, str(r, "expr"), metric)
		}
	}
	// promtool parses PromQL for real where it is installed (Debian:
	// prometheus); the metric names are checked against the collector in
	// TestDashboardAndAlertsUseOnlyMetricsTheCollectorRegisters either way.
	if promtool, err := exec.LookPath("promtool"); err == nil {
		out, err := exec.Command(promtool, "check", "rules", filepath.Join(root(t), "deploy", "prometheus", "alerts.yaml")).CombinedOutput()
		if err != nil {
			t.Errorf("promtool check rules: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool not installed: PromQL syntax checked by TestEveryRuleAndPanelQueryIsValidPromQL (deploy/helm/test) only (no rule-file checks)")
	}
}

func TestDashboardUsesItsVariablesEverywhere(t *testing.T) {
	d := dashboard(t)
	vars := map[string]map[string]any{}
	for _, v := range list(d, "templating.list") {
		m, _ := v.(map[string]any)
		vars[str(m, "name")] = m
	}
	if ds := vars["datasource"]; ds == nil || str(ds, "type") != "datasource" || str(ds, "query") != "prometheus" {
		t.Errorf("collector.json: no datasource variable of type datasource querying prometheus")
	}
	for _, name := range []string{"source", "account"} {
		if v := vars[name]; v == nil || str(v, "type") != "query" {
			t.Errorf("collector.json: no query variable %s", name)
		}
	}
	for name, v := range vars {
		if str(v, "type") == "query" && str(v, "datasource.uid") != "${datasource}" {
			t.Errorf("collector.json: variable %s queries %v, want ${datasource}", name, get(v, "datasource"))
		}
	}
	if str(d, "uid") == "" || str(d, "title") == "" {
		t.Errorf("collector.json: no uid or title (provisioning needs a stable uid)")
	}
	panels := dashboardPanels(d)
	if len(panels) < 15 {
		t.Errorf("collector.json: only %d panels", len(panels))
	}
	usesSource := false
	for _, p := range panels {
		title := str(p, "title")
		if str(p, "datasource.uid") != "${datasource}" {
			t.Errorf("panel %q: datasource %v, want ${datasource}", title, get(p, "datasource"))
		}
		targets := list(p, "targets")
		if len(targets) == 0 {
			t.Errorf("panel %q has no query", title)
		}
		for _, tg := range targets {
			if u := str(tg, "datasource.uid"); u != "" && u != "${datasource}" {
				t.Errorf("panel %q: a target on datasource %q", title, u)
			}
			e := str(tg, "expr")
			usesSource = usesSource || (strings.Contains(e, `source=~"$source"`) && strings.Contains(e, `account=~"$account"`))
		}
	}
	if !usesSource {
		t.Error("collector.json: no query filters by $source and $account")
	}
	// The panels the brief asks for, found by the metric they show.
	all := ""
	for _, p := range panels {
		for _, tg := range list(p, "targets") {
			all += str(tg, "expr") + "\n"
		}
	}
	for _, m := range []string{"collector_watermark_lag_seconds", "collector_rows_fetched_total", "collector_rows_delivered_total",
		"collector_requests_total", "collector_rate_tokens_remaining", "collector_rate_limited_total", "collector_windows_split_total",
		"collector_nextpage_restarts_total", "collector_sink_write_duration_seconds_bucket", "collector_sink_errors_total",
		"collector_pipeline_buffered_records", "collector_pipeline_capacity_records", "collector_backfill_windows_left",
		"collector_catchup_eta_seconds", "collector_checkpoint_commits_total", "collector_checkpoint_commit_errors_total",
		"collector_dead_letters_total"} {
		if !strings.Contains(all, m) {
			t.Errorf("collector.json: no panel shows %s", m)
		}
	}
}
