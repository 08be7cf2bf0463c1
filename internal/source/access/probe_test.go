package access

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/svcexport/collector/internal/api"
	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/secret"
	"github.com/svcexport/collector/internal/source/catalog"
	"github.com/svcexport/collector/internal/testinfra/simtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// C2, C5: Probe asks one first page per core stream and reports the
// streams the key may not read (a sub-account, organization-level audit
// logs) with their 403 and reason, the others ok; no secret shows.
func TestProbe_C2_ReportsEveryStreamTheKeyMayNotRead(t *testing.T) {
	sim := simtest.Start(t, func(c *apisim.Config) {
		c.Keys[0].AllowedAccounts = []string{"acme"}
		c.Keys[0].NoOrgAccess = true
	})
	cfg := catalog.DefaultConfig()
	cfg.API.BaseURL, cfg.API.KeyID, cfg.API.Secret = sim.URL(), "sim-key", secret.New("sim-secret")
	cfg.API.Retry = api.RetryConfig{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}
	cfg.Edge.BaseURL, cfg.Edge.Token = sim.EdgeURL(), secret.New("sim-edge-token")
	cfg.Accounts = []string{"acme", "acme-dev"}
	cfg.OrgAuditLogs = true
	res, err := Probe(t.Context(), cfg, api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 7*2+1 {
		t.Fatalf("%d results, want 7 core sources x 2 accounts + org: %v", len(res), res)
	}
	for _, r := range res {
		denied := r.Stream.Account != "acme"
		switch {
		case denied && (r.OK() || r.Status != 403 || r.Reason != api.ReasonForbidden || !strings.Contains(r.String(), "403")):
			t.Errorf("%s: %v (status %d, reason %q), want a 403", r.Stream, r.Err, r.Status, r.Reason)
		case !denied && (!r.OK() || r.String() != r.Stream.String()+": ok"):
			t.Errorf("%s: %v, want ok", r.Stream, r.Err)
		}
		if strings.Contains(r.String(), "sim-secret") {
			t.Fatalf("a result holds the secret: %s", r)
		}
	}
	// One request per stream and no more; the edge API is not asked.
	if st := sim.Stats().Get("sim-admin", catalog.SourceAuditLogs); st.Requests != 3 {
		t.Errorf("audit_logs requests %d, want 3 (acme, acme-dev, org)", st.Requests)
	}
	if st := sim.Stats().Get("edge", "edge"); st.Requests != 0 {
		t.Errorf("%d edge requests", st.Requests)
	}
}

// A configuration that does not validate gives an error and no probe.
func TestProbe_InvalidConfigurationProbesNothing(t *testing.T) {
	if _, err := Probe(t.Context(), catalog.DefaultConfig(), api.Options{}); err == nil || !strings.Contains(err.Error(), "api.base_url") {
		t.Fatalf("err = %v", err)
	}
}
