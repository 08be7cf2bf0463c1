package alerttrack

import (
	"fmt"
	"testing"
	"time"
)

func alert(uuid string, create, update int64) []byte {
	return fmt.Appendf(nil, `{"uuid":%q,"create_time":%d,"update_time":%d,"status":"OPEN"}`, uuid, create, update)
}

// C6: an alert counts as new when first seen and again only when its
// update_time grew; one without uuid always counts; Prune forgets alerts
// created before the lookback.
func TestTracker_C6_ReportsNewAndUpdatedAlertsOnly(t *testing.T) {
	const base = 1795168800000 // 2026-11-20, epoch milliseconds (C6)
	tr := New(24 * time.Hour)
	if !tr.Observe(alert("a", base+1000, base+1000)) || tr.Observe(alert("a", base+1000, base+1000)) {
		t.Fatal("first sight new, same version again not new")
	}
	if !tr.Observe(alert("a", base+1000, base+2000)) || tr.Observe(alert("a", base+1000, base+1500)) {
		t.Fatal("a grown update_time is new, an older one is not")
	}
	if !tr.Observe([]byte(`{"create_time":5}`)) || !tr.Observe([]byte(`{"create_time":5}`)) {
		t.Fatal("an alert without uuid always counts")
	}
	tr.Observe(alert("b", base+9000, base+9000))
	tr.Prune(time.UnixMilli(base + 5000))
	if !tr.Observe(alert("a", base+1000, base+2000)) || tr.Observe(alert("b", base+9000, base+9000)) {
		t.Fatal("Prune must forget a (created before) and keep b")
	}
}
