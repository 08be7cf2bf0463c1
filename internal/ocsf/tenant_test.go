package ocsf_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/svcexport/collector/internal/ocsf"
)

// Issue 32: an event of a named tenant carries the label "tenant:NAME" in
// its metadata (tenant_uid stays the record's account within it), a
// snapshot both labels; the one-tenant form none. Each is valid OCSF.
func TestATenantsEventIsLabelledWithItsTenant(t *testing.T) {
	s := loadSchema(t)
	raw := []byte(`{"agentVersion":"6.9.0-1234","createdTime":"2026-11-20T10:00:00.000Z","hostname":"web-1","ipAddr":"10.0.0.1",` +
		`"lastUpdate":"2026-11-20T11:00:00.000Z","mid":100001,"mode":"normal","os":"Linux","status":"INACTIVE","tags":{"team":"sre"}}`)
	for _, tc := range []struct {
		tenant string
		snap   bool
		want   []string
	}{{"", false, nil}, {"alpha", false, []string{"tenant:alpha"}}, {"alpha", true, []string{"snapshot", "tenant:alpha"}}} {
		e, _ := build("agent_info", raw)
		e.Tenant, e.Snapshot = tc.tenant, tc.snap
		out, _, err := ocsf.New(ocsf.Options{}).Append(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		check(t, s, raw, out)
		var ev struct {
			Metadata struct {
				Labels []string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(out, &ev); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ev.Metadata.Labels, tc.want) {
			t.Errorf("tenant %q snapshot %v: labels %v, want %v", tc.tenant, tc.snap, ev.Metadata.Labels, tc.want)
		}
	}
}
