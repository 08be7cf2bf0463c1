package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// `collector tap` (issue 24) prints what the running daemon delivers of
// one source and account, as the C7 envelopes the sinks store, and spends
// no API request: the simulator answers as many requests while a tap runs
// as in as long a time before it (the daemon's polls alone). A source the
// daemon does not collect, and a daemon that is not there, are clear
// errors.
func TestTapPrintsWhatTheDaemonDeliversWithoutAnAPIRequest(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) { c.Rates["dns"] = 36000 })
	addr := harness.FreeAddr(t)
	c := harness.New(t, harness.Config{Sim: sim, Start: time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Second), Sources: []string{"dns"},
		Lag: 5 * time.Second, Interval: time.Second, Metrics: addr, NoFsync: true})
	p := c.Start(t)
	defer p.Kill()
	requests := func() int64 {
		var n int64
		for _, cnt := range sim.Stats().Counters {
			n += cnt.Requests
		}
		return n
	}
	tap := func(args ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, harness.CollectorBin(t), append([]string{"tap", "--addr", addr}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errOut.String()
	}
	// Caught up: the daemon polls once a second.
	for deadline := time.Now().Add(time.Minute); ; {
		if st := harness.LiveState(addr); len(st) > 0 {
			caught := true
			for _, s := range st {
				caught = caught && time.Since(s.Watermark) < 20*time.Second
			}
			if caught {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not caught up within a minute\n%s", p.Tail(20))
		}
		time.Sleep(500 * time.Millisecond)
	}
	before0 := requests()
	began := time.Now()
	code, out, errOut := tap("--source", "dns", "--account", "acme", "--limit", "30")
	took := time.Since(began)
	during := requests() - before0
	if code != 0 {
		t.Fatalf("tap exit %d: %s", code, errOut)
	}
	time.Sleep(took)
	idle := requests() - before0 - during
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e harness.Envelope
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if e.Source != "dns" || e.Account != "acme" {
			t.Errorf("envelope of %s/%s, want dns/acme", e.Source, e.Account)
		}
		if id, err := record.ID(e.Source, e.Record); err != nil || id != e.ID {
			t.Errorf("envelope id %s is not the C7 id of its record (%s, %v)", e.ID, id, err)
		}
		lines++
	}
	t.Logf("tap: %d envelopes in %v; API requests %d during the tap, %d in as long after it", lines, took.Round(time.Millisecond), during, idle)
	if lines != 30 {
		t.Errorf("%d envelopes, want --limit 30", lines)
	}
	if during > idle+3 {
		t.Errorf("%d API requests during the tap, %d in as long a time without: the tap spent requests", during, idle)
	}
	// The tapped records are the ones the sink stored.
	stored := c.ReadOutput(t).IDs[record.Stream{Source: "dns", Account: "acme"}]
	sc = bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e harness.Envelope
		_ = json.Unmarshal(sc.Bytes(), &e)
		if stored[e.ID] == 0 {
			t.Errorf("tapped %s, which the sink does not hold", e.ID)
		}
	}
	if code, _, errOut := tap("--source", "nope"); code != 1 || !strings.Contains(errOut, "nope") {
		t.Errorf("unknown source: exit %d, %q", code, errOut)
	}
	if code, _, errOut := tap("--source", "dns", "--addr", harness.FreeAddr(t)); code != 1 || !strings.Contains(errOut, "cannot be reached") {
		t.Errorf("no daemon: exit %d, %q", code, errOut)
	}
	if code, _, _ := tap(); code != 2 {
		t.Errorf("no --source: exit %d, want 2", code)
	}
}
