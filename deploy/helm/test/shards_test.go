package helmtest

import (
	"strings"
	"testing"
)

// shardsValues runs three shards of a configuration of tenants, each
// tenant's secret a file of the credentials Secret.
const shardsValues = `
shards: 3
config:
  api: null
  tenants:
    - name: acme
      api: {base_url: https://api.example.com, key_id: KEY-ACME, secret_file: /etc/collector-credentials/acme-api-secret}
    - name: globex
      api: {base_url: https://api.example.com, key_id: KEY-GLOBEX, secret_file: /etc/collector-credentials/globex-api-secret}
`

// Issue 32: shards: 3 runs three pods of the StatefulSet, each with its
// own checkpoint volume, each passing its ordinal as its shard
// (COLLECTOR_SHARD=ordinal/3, the pod's host name being its name); no
// one-tenant API secret variable (it would clash with tenants). The
// default (shards: 1) renders no COLLECTOR_SHARD, and shards > 1 without
// tenants is refused.
func TestChartShardsRunsOnePodPerShard(t *testing.T) {
	r := mustRender(t, "team-a", values(t, shardsValues))
	if r.sts.Spec.Replicas == nil || *r.sts.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", r.sts.Spec.Replicas)
	}
	if n := len(r.sts.Spec.VolumeClaimTemplates); n != 1 {
		t.Errorf("%d volumeClaimTemplates, want 1 (one volume per pod)", n)
	}
	env := map[string]string{}
	for _, e := range container(t, "shards", r.sts).Env {
		env[e.Name] = e.Value
	}
	if env["COLLECTOR_SHARD"] != "ordinal/3" {
		t.Errorf("COLLECTOR_SHARD %q, want ordinal/3", env["COLLECTOR_SHARD"])
	}
	if _, ok := env["COLLECTOR_API__SECRET_FILE"]; ok {
		t.Error("COLLECTOR_API__SECRET_FILE set with tenants: the collector refuses both forms at once")
	}
	_, text := mountedConfig(t, "shards", r.objects)
	if !strings.Contains(text, "tenants:") || strings.Contains(text, "CHANGE-ME") {
		t.Errorf("the mounted config is not the tenants' alone:\n%s", text)
	}

	def := mustRender(t, "team-a", nil)
	for _, e := range container(t, "default", def.sts).Env {
		if e.Name == "COLLECTOR_SHARD" {
			t.Errorf("the default rendering sets COLLECTOR_SHARD=%s", e.Value)
		}
	}
	if _, err := render(t, "team-a", values(t, "shards: 2")); err == nil || !strings.Contains(err.Error(), "needs config.tenants") {
		t.Errorf("shards: 2 without tenants: %v, want a refusal", err)
	}
}
