package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/harness"
)

// The server's pages are bigger than api.page_rows (6,000 against 5,000)
// while the buffer is smaller than what every stream reserves: the
// collector learns the page size, never deadlocks, and delivers
// everything (hostile-input review, item 8: 2,733 rows, then nothing).
func TestPagesBiggerThanConfiguredWithAFullyReservedBufferAreComplete(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates, func(c *apisim.Config) {
		c.PageSize = 6000
		for k := range c.Rates {
			c.Rates[k] = 2500
		}
	})
	start := time.Now().UTC().Add(-8 * time.Hour).Truncate(time.Minute)
	// 18 streams reserving 5,000 each fill a 20,000-record buffer four times over.
	c := harness.New(t, harness.Config{Sim: sim, Start: start, Env: []string{"COLLECTOR_PIPELINE__BUFFER_RECORDS=20000"}})
	logs := c.RunOnce(t, 4*time.Minute).Logs
	c.Compare(t, c.ReadOutput(t), harness.AllStreams())
	if !strings.Contains(logs, "page") {
		t.Logf("logs:\n%s", harness.Tail(logs, 10))
	}
}

// A full disk: the file sink's writes fail with ENOSPC. /readyz says so
// (the sink_write:file check) instead of "ok"; nothing is acknowledged, so the
// checkpoint stays behind; once there is room again the collector goes on
// and the output is complete. Needs root for a small tmpfs (CI runs as
// root).
func TestAFullDiskShowsInReadyzAndLosesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; CI runs as root")
	}
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Minute)
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	c := harness.New(t, harness.Config{Sim: sim, Start: start, OutDir: filepath.Join(mnt, "out"), Metrics: harness.FreeAddr(t)})
	p := c.Start(t)
	metrics := c.Config().Metrics

	deadline := time.Now().Add(60 * time.Second)
	var checks map[string]string
	for {
		code, ch := harness.Ready(metrics)
		if code == http.StatusServiceUnavailable && strings.Contains(ch["sink_write:file"], "no space") {
			checks = ch
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never reported the full disk: %d %v\n%s", code, ch, p.Tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("/readyz while the disk is full: %v", checks)

	if out, err := exec.Command("mount", "-o", "remount,size=256m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		code, ch := harness.Ready(metrics)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz did not recover once there was room: %d %v", code, ch)
		}
		time.Sleep(200 * time.Millisecond)
	}
	harness.WaitCommitted(t, p, metrics, start, nil, 0, 2*time.Minute)
	p.Terminate()
	if err := p.Wait(t, 60*time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.Tail(20))
	}
	c.Compare(t, c.ReadOutput(t), harness.AllStreams())
}

// A checkpoint file cut short (a full disk, a bad copy) is refused with exit
// 1 and a message that says how to recover, at every length tried: never a
// crash (SIGBUS, exit 2) and never a silent restart from sources.start.
func TestATruncatedCheckpointExits1SayingHowToRecover(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	db, err := checkpoint.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	states := map[record.Stream]checkpoint.State{}
	for i := range 200 {
		states[record.Stream{Source: "dns", Account: "acct-" + strings.Repeat("x", i%7) + string(rune('a'+i%26))}] = checkpoint.State{Cursor: cursor.Cursor{Watermark: time.Now().UTC()}, Delivered: int64(i)}
	}
	if err := db.CommitMany(context.Background(), states); err != nil {
		t.Fatal(err)
	}
	db.Close()
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// Lengths below the last page bbolt uses (its file grows in chunks,
	// so a cut of the unused tail is harmless and opens fine).
	for _, n := range []int{len(data) / 2, 4096*3 + 1000, 4096 * 3, 100} {
		if n <= 0 || n >= len(data) {
			continue
		}
		path := filepath.Join(dir, "cut.db")
		if err := os.WriteFile(path, data[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "c.yaml")
		yaml := "api:\n  base_url: http://127.0.0.1:1\n  key_id: k\n  secret: s\nmetrics:\n  listen: \"\"\nsink:\n  file:\n    dir: " + filepath.Join(dir, "out") + "\ncheckpoint:\n  path: " + path + "\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out := harness.RunCLI(t, nil, "run", "--once", "--config", cfg)
		if code != 1 || !strings.Contains(out, path) || strings.Contains(out, "SIGBUS") || strings.Contains(out, "panic") {
			t.Fatalf("checkpoint cut at %d of %d bytes: exit %d\n%s", n, len(data), code, out)
		}
	}
}
