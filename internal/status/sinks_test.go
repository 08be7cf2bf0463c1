package status

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A running collector's state names every sink and what each has not
// acknowledged yet; the checkpoint's state has no such column.
func TestPrintNamesEverySinkAndItsPendingRecords(t *testing.T) {
	states := []StreamState{{Source: "dns", Account: "acme", Sinks: []SinkLag{
		{Sink: "siem", PendingRecords: 0},
		{Sink: "lake", PendingRecords: 1200, OldestPendingSeconds: 185},
	}}}
	var out bytes.Buffer
	if err := Print(&out, states, false); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "SINKS: PENDING") || !strings.Contains(s, "siem 0, lake 1200 (3m5s)") {
		t.Fatalf("table:\n%s", s)
	}
	out.Reset()
	if err := Print(&out, states, true); err != nil {
		t.Fatal(err)
	}
	var back []StreamState
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || len(back) != 1 || len(back[0].Sinks) != 2 || back[0].Sinks[1].PendingRecords != 1200 {
		t.Fatalf("JSON %s: %v", out.String(), err)
	}
	out.Reset()
	states[0].Sinks = nil
	if err := Print(&out, states, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "SINKS") {
		t.Fatalf("a state without sinks has the column:\n%s", out.String())
	}
}
