package catalog

import (
	"testing"
	"time"
)

// A poll of a caught-up stream asks its newest window; an edge_alerts
// poll also asks again the alert lookback in windows of at most
// max_window (C6). The cadence of interval: auto counts these requests.
func TestPollRequestsCountTheAlertLookback(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	alerts, _ := LookupSpec(SourceEdgeAlerts)
	events, _ := LookupSpec(SourceEdgeAuditEvents)
	dns, _ := LookupSpec(SourceDNS)
	six := 6 * time.Hour
	noLookback := cfg.Edge
	noLookback.AlertUpdateLookback = 0
	for _, tc := range []struct {
		name string
		spec Spec
		s    SourceSettings
		edge EdgeConfig
		want int
	}{
		{"dns", dns, cfg.Sources.Resolve(SourceDNS), cfg.Edge, 1},
		{"edge_audit_events", events, cfg.Sources.Resolve(SourceEdgeAuditEvents), cfg.Edge, 1},
		{"edge_alerts, the defaults (24h lookback, max_window 7d)", alerts, cfg.Sources.Resolve(SourceEdgeAlerts), cfg.Edge, 2},
		{"edge_alerts, lookback off", alerts, cfg.Sources.Resolve(SourceEdgeAlerts), noLookback, 1},
		{"edge_alerts, max_window 6h", alerts, SourceSettings{MaxWindow: six}, cfg.Edge, 5},
	} {
		if got := tc.spec.PollRequests(tc.s, tc.edge); got != tc.want {
			t.Errorf("%s: %d requests a poll, want %d", tc.name, got, tc.want)
		}
	}
}
