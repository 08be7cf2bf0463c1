package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// postReload sends POST /-/reload to addr and returns the status and body.
func postReload(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/-/reload", "", nil)
	if err != nil {
		t.Fatalf("POST /-/reload: %v", err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// waitStreams waits until /state lists every stream of want (and, with
// exact, nothing else), each one having committed when committed.
func waitStreams(t *testing.T, p *harness.Process, addr string, want []record.Stream, exact, committed bool) {
	t.Helper()
	harness.WaitState(t, p, addr, 2*time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
		for _, k := range want {
			s, ok := st[k]
			if !ok || committed && s.Watermark.IsZero() {
				return false, fmt.Sprintf("%s: listed %v, state %+v; /state has %d streams", k, ok, s, len(st))
			}
		}
		if exact && len(st) != len(want) {
			return false, fmt.Sprintf("/state has %d streams, want %d", len(st), len(want))
		}
		return true, ""
	})
}

// Issue 33 item 1: SIGHUP and POST /-/reload read the configuration again
// and apply it in place: an account added by SIGHUP and a source added by
// POST start, in the same process (same pid, never exited), while the
// streams before go on; a bad configuration, or one that changes what
// needs a restart, is refused naming its key (HTTP 400, the gauge at 0),
// and the collector goes on with the one before; a stream removed stops.
// Before, SIGHUP stopped the collector and /-/reload did not exist.
func TestReloadBySIGHUPAndHTTPChangesStreamsInPlace(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-2 * 24 * time.Hour).Truncate(time.Minute)
	cfg := harness.Config{Sim: sim, Start: start, Sources: []string{"dns"}, Accounts: []string{"acme"},
		Rate: harness.Rate{Limit: 40, Period: 5 * time.Second}, Metrics: harness.FreeAddr(t),
		Env: []string{"COLLECTOR_METRICS__RELOAD__ENABLED=true"}}
	c := harness.New(t, cfg)
	p := c.Start(t)
	pid := p.PID()
	addr := cfg.Metrics
	acme := record.Stream{Source: "dns", Account: "acme"}
	waitStreams(t, p, addr, []record.Stream{acme}, true, true)

	// SIGHUP: the account acme-dev is added.
	cfg.Dir = c.Config().Dir
	cfg.Accounts = []string{"acme", "acme-dev"}
	harness.New(t, cfg)
	signalled := time.Now()
	p.Signal(syscall.SIGHUP)
	dev := record.Stream{Source: "dns", Account: "acme-dev"}
	waitStreams(t, p, addr, []record.Stream{acme, dev}, true, false)
	listed := time.Since(signalled)
	waitStreams(t, p, addr, []record.Stream{acme, dev}, true, true)
	t.Logf("SIGHUP to the added stream in /state: %v; to its first commit: %v", listed.Round(time.Millisecond), time.Since(signalled).Round(time.Millisecond))

	// POST /-/reload: the source user_logins is added.
	cfg.Sources = []string{"dns", "user_logins"}
	harness.New(t, cfg)
	code, body := postReload(t, addr)
	if code != http.StatusOK {
		t.Fatalf("POST /-/reload of a good configuration: %d %s\n%s", code, body, p.Tail(20))
	}
	all := harness.Streams([]string{"dns", "user_logins"}, []string{"acme", "acme-dev"})
	waitStreams(t, p, addr, all, true, true)

	// A bad configuration (an unknown key), and one that changes the
	// buffer: refused with the key, the gauge at 0, the streams go on.
	path := c.ConfigPath()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ extra, key string }{
		{"bogus_key: 1\n", "bogus_key"},
		{"pipeline:\n  buffer_records: 777\n", "pipeline.buffer_records"},
	} {
		if err := os.WriteFile(path, append(append([]byte{}, good...), tc.extra...), 0o600); err != nil {
			t.Fatal(err)
		}
		code, body = postReload(t, addr)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.key) {
			t.Errorf("POST /-/reload with %q: %d %q, want 400 naming %s", tc.extra, code, body, tc.key)
		}
		if g := harness.ScrapeGauges(addr, "collector_config_last_reload_successful"); g["collector_config_last_reload_successful"] != 0 {
			t.Errorf("after a refused reload: %v, want collector_config_last_reload_successful 0", g)
		}
		// The collector logs the refusal before it answers, but the harness
		// reads its stderr on its own: on a busy machine the line may come
		// a moment after the answer.
		logged := func() bool { return strings.Contains(p.Logs(), `"key":"`+tc.key+`"`) }
		for deadline := time.Now().Add(30 * time.Second); !logged() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if !logged() {
			t.Errorf("the refusal of %s is not logged with its key\n%s", tc.key, p.Tail(5))
		}
	}
	// The old configuration runs on: every stream keeps committing.
	before := harness.LiveState(addr)
	harness.WaitState(t, p, addr, 2*time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
		for _, k := range all {
			if st[k].Delivered <= before[k].Delivered && !st[k].CaughtUp {
				return false, fmt.Sprintf("%s delivered %d, %d before the refused reloads", k, st[k].Delivered, before[k].Delivered)
			}
		}
		return true, ""
	})

	// Removed: the account acme-dev again, by SIGHUP.
	cfg.Accounts = []string{"acme"}
	harness.New(t, cfg)
	p.Signal(syscall.SIGHUP)
	waitStreams(t, p, addr, harness.Streams([]string{"dns", "user_logins"}, []string{"acme"}), true, true)
	harness.WaitState(t, p, addr, time.Minute, func(map[record.Stream]harness.LiveStream) (bool, string) {
		g := harness.ScrapeGauges(addr, "collector_config_last_reload_successful")
		return g["collector_config_last_reload_successful"] == 1, fmt.Sprintf("gauges %v", g)
	})

	select {
	case <-p.Exited():
		t.Fatalf("the collector exited during the reloads: %v\n%s", p.Err(), p.Tail(20))
	default:
	}
	if p.PID() != pid {
		t.Fatalf("pid %d, was %d", p.PID(), pid)
	}
	if n := strings.Count(p.Logs(), `"msg":"configuration reloaded"`); n != 3 {
		t.Errorf("%d reloads logged, want 3\n%s", n, p.Tail(20))
	}
	p.Terminate()
	if err := p.Wait(t, time.Minute); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.Tail(20))
	}
	for _, l := range strings.Split(p.Logs(), "\n") {
		if strings.Contains(l, "reload") {
			t.Log(l)
		}
	}
}
