package api

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// collector_retries_total exists at 0 for every reason of every
// functionality a poller announces, and of the token endpoint, before any
// request: a healthy collector's panels show 0, not "No data".
func TestRetriesExistAtZeroFromTheStart(t *testing.T) {
	t.Parallel()
	c, m := testClient(t, http.NotFoundHandler(), nil)
	c.InitFunctionality(cloudActivities)
	// Counted before anything asks for a series (asking creates it).
	if n := testutil.CollectAndCount(m.retries, "collector_retries_total"); n != 2*len(retryReasons) || len(retryReasons) != 8 {
		t.Errorf("%d series of collector_retries_total, want 16 (2 functionalities x 8 reasons)", n)
	}
	if v := testutil.ToFloat64(m.retries.WithLabelValues(cloudActivities, "429")); v != 0 {
		t.Errorf("retries = %v", v)
	}
}
