package ocsf_test

import (
	"encoding/json"
	"testing"

	"github.com/svcexport/collector/internal/ocsf"
)

// An inventory snapshot of an agent is a Device Inventory Info event of
// activity Collect labelled "snapshot"; the same record as an event of its
// window stays activity Log without the label. Both are valid OCSF 1.3.0.
func TestASnapshotIsCollectedAndLabelled(t *testing.T) {
	s := loadSchema(t)
	raw := []byte(`{"agentVersion":"6.9.0-1234","createdTime":"2026-11-20T10:00:00.000Z","hostname":"web-1","ipAddr":"10.0.0.1",` +
		`"lastUpdate":"2026-11-20T11:00:00.000Z","mid":100001,"mode":"normal","os":"Linux","status":"INACTIVE","tags":{"team":"sre"}}`)
	for _, snap := range []bool{false, true} {
		e, _ := build("agent_info", raw)
		e.Snapshot = snap
		out, _, err := ocsf.New(ocsf.Options{}).Append(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		check(t, s, raw, out)
		var ev struct {
			Activity int `json:"activity_id"`
			Metadata struct {
				Labels []string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(out, &ev); err != nil {
			t.Fatal(err)
		}
		wantAct, wantLabels := 1, 0
		if snap {
			wantAct, wantLabels = 2, 1
		}
		if ev.Activity != wantAct || len(ev.Metadata.Labels) != wantLabels || snap && ev.Metadata.Labels[0] != "snapshot" {
			t.Errorf("snapshot %v: activity %d labels %v, want activity %d", snap, ev.Activity, ev.Metadata.Labels, wantAct)
		}
	}
}
