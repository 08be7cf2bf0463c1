package app

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/shard"
)

// Issue 32: a sharded collector's /state names its shard and tenants
// (headers, the body unchanged), and collector_shard_owned_tenants counts
// them, labelled with the shard and the configured total.
func TestShardIsNamedInStateAndMetrics(t *testing.T) {
	t.Parallel()
	sh := config.Sharding{Shard: shard.Shard{Index: 1, Count: 3}, Owned: []string{"acme", "globex"}, Of: 5}
	h := shardHeaders(sh, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("[]")) }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/state", nil))
	if rec.Header().Get("Collector-Shard") != "1/3" || rec.Header().Get("Collector-Shard-Tenants") != "acme,globex" || rec.Body.String() != "[]" {
		t.Errorf("/state: headers %v, body %q", rec.Header(), rec.Body)
	}

	reg := prometheus.NewRegistry()
	if err := registerShard(reg, config.Config{}); err != nil {
		t.Fatal(err)
	}
	if n, _ := testutil.GatherAndCount(reg); n != 0 {
		t.Errorf("an unsharded collector has %d shard series", n)
	}
}

// registerShard of a configuration cut by ForShard: the gauge holds the
// shard's tenants.
func TestShardGaugeCountsOwnedTenants(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	for _, name := range []string{"a1", "b2", "c3", "d4", "e5", "f6"} {
		cfg.Tenants = append(cfg.Tenants, config.TenantConfig{Name: name})
	}
	cfg.Shard = "0/2"
	cut, err := cfg.ForShard("h")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := registerShard(reg, cut); err != nil {
		t.Fatal(err)
	}
	got, err := testutil.GatherAndCount(reg, "collector_shard_owned_tenants")
	if err != nil || got != 1 {
		t.Fatalf("%d series, %v", got, err)
	}
	mfs, _ := reg.Gather()
	v := mfs[0].GetMetric()[0].GetGauge().GetValue()
	if int(v) != len(cut.Tenants) || len(cut.Tenants) == 0 || len(cut.Tenants) == 6 {
		t.Errorf("gauge %v, shard's tenants %d of 6", v, len(cut.Tenants))
	}
	if l := mfs[0].GetMetric()[0].GetLabel(); len(l) != 2 || l[0].GetValue() != "0/2" || l[1].GetValue() != "6" {
		t.Errorf("labels %v, want shard 0/2, tenants 6", l)
	}
}
