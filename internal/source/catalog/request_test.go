package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/window"
)

func TestFirstPageURL_C3_C6(t *testing.T) {
	w := window.Window{Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
	dns, _ := LookupSpec(SourceDNS)
	u, body, err := dns.FirstPage(w, SourceSettings{Filters: []Filter{{Expression: "eq", Field: "fqdn", Value: "x"}}}, EdgeConfig{})
	if err != nil || u != "/api/v2/Activities/DNSs/search" ||
		string(body) != `{"timeFilter":{"startTime":"2026-11-20T00:00:00.000Z","endTime":"2026-11-21T00:00:00.000Z"},"filters":[{"expression":"eq","field":"fqdn","value":"x"}]}` {
		t.Fatalf("dns: %s %s %v", u, body, err)
	}
	ca, _ := LookupSpec(SourceCloudActivities)
	u, body, _ = ca.FirstPage(w, SourceSettings{}, EdgeConfig{})
	if body != nil || u != "/api/v2/CloudActivities?endTime=2026-11-21T00%3A00%3A00.000Z&startTime=2026-11-20T00%3A00%3A00.000Z" {
		t.Fatalf("cloud activities: %s", u)
	}
	al, _ := LookupSpec(SourceEdgeAlerts)
	u, _, _ = al.FirstPage(w, SourceSettings{}, EdgeConfig{AlertStatusFilter: "OPEN,CLOSED"})
	if !strings.Contains(u, "start_time=1795132800000") || !strings.Contains(u, "end_time=1795219200000") || !strings.Contains(u, "status_filter=OPEN%2CCLOSED") {
		t.Fatalf("edge alerts: %s", u)
	}
}
