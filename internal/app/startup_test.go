package app

import (
	"errors"
	"testing"

	"github.com/svcexport/collector/internal/config"
)

// While Run starts, the "start" check of /readyz and the note of /state
// name every sink not started yet with its last start error, and say
// nothing once the pipeline runs (issue 20).
func TestStartupNamesTheSinksItWaitsFor(t *testing.T) {
	t.Parallel()
	siem := &sinkRun{cfg: config.SinkConfig{Name: "siem", Type: config.SinkKafka}}
	lake := &sinkRun{cfg: config.SinkConfig{Name: "lake", Type: config.SinkClickHouse}}
	var st startup
	if err := st.err(); err == nil || err.Error() != "starting" {
		t.Fatalf("before the sinks are built: %v, want starting", err)
	}
	st.waitFor([]*sinkRun{siem, lake})
	if got, want := st.note(), "waiting for sinks siem: starting; lake: starting"; got != want {
		t.Fatalf("before a start attempt ended: %q, want %q", got, want)
	}
	siem.ready.set(errors.New("kafka sink: connection refused"))
	lake.ready.set(nil) // started
	if got, want := st.note(), "waiting for sink siem: kafka sink: connection refused"; got != want {
		t.Fatalf("one sink down: %q, want %q", got, want)
	}
	siem.ready.set(nil)
	if got, want := st.note(), "starting"; got != want {
		t.Fatalf("every sink started, the pipeline not yet: %q, want %q", got, want)
	}
	st.finish()
	if err := st.err(); err != nil || st.note() != "" {
		t.Fatalf("after finish: %v %q, want nothing", err, st.note())
	}
}
