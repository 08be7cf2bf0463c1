package record

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A snapshot (an inventory walk's record) says so in its envelope; any
// other envelope is written as before, without the member.
func TestEnvelope_ASnapshotSaysSoAndAnEventDoesNot(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	e := Envelope{ID: "ab", Source: "agent_info", Account: "acme", Time: at, WindowStart: at.Add(-time.Hour), WindowEnd: at,
		FetchedAt: at, Record: []byte(`{"mid":1}`)}
	if s := string(e.AppendJSON(nil)); strings.Contains(s, "snapshot") {
		t.Fatalf("an event says snapshot: %s", s)
	}
	e.Snapshot = true
	b := e.AppendNDJSON(nil)
	var got struct {
		Snapshot bool            `json:"snapshot"`
		Record   json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(b, &got); err != nil || !got.Snapshot || string(got.Record) != `{"mid":1}` {
		t.Fatalf("snapshot envelope %s: %+v, %v", b, got, err)
	}
}
