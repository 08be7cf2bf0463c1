package recheck

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/svcexport/collector/internal/record"
)

func TestMetricsCountAResult(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	k := record.Stream{Source: "dns", Account: "acme"}
	// One window grew by 5, another fell by 10: the unit's count fell, and
	// the narrowing finds both.
	u := unitOf(t, cfgForTests(), leaves(1000, 1000, 1000, 1000), false)
	r := run(t, u, []int64{1000, 1005, 990, 1000}, nil)
	r.Refetched = 1005 // the poller fills it: the grown window fetched whole
	m.Observe(k, r)
	m.SetPending(k, 7)
	m.Expired(k, 2)
	var nilM *Metrics
	nilM.Observe(k, r) // a nil *Metrics records nothing
	for _, c := range []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"windows", m.windows, 4},
		{"grown", m.grown, 1},
		{"recovered", m.recovered, 5},
		{"refetched", m.refetched, 1005},
		{"recovered at a last point", m.lastPoint, 0},
		{"shrunk", m.shrunk, 10},
		{"requests", m.requests, float64(r.Requests)},
		{"expired", m.expired, 2},
		{"pending", m.pending, 7},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 9 {
		t.Fatalf("%d series gathered (%v), want 9", n, err)
	}
	// At a unit's last point, what it recovered counts there too.
	fu := unitOf(t, cfgForTests(), leaves(1000, 1000), true)
	m.Observe(k, run(t, fu, []int64{1000, 1004}, nil))
	if got := testutil.ToFloat64(m.lastPoint); got != 4 {
		t.Fatalf("recovered at a last point = %v, want 4", got)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("registering twice is no error")
	}
}
