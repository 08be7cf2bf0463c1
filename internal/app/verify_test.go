package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/checkpoint"
	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/cursor"
	"github.com/svcexport/collector/internal/record"
)

// With simulator.enabled, verify asks the embedded simulator like run
// does: after a run --once every (stream, day) is complete (exit 0); the
// JSON report has a row per (stream, day).
func TestVerifyWithTheEmbeddedSimulator(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().UTC().Add(-30 * time.Hour).Truncate(time.Hour)
	yaml := fmt.Sprintf(`simulator:
  enabled: true
  settings: {rates: {dns: 100, edge_alerts: 20}}
checkpoint: {path: %s}
metrics: {listen: ""}
log: {progress: 0s}
sources:
  default: {enabled: false, start: %s, lag: 2m, interval: 1s}
  dns: {enabled: true}
  edge_alerts: {enabled: true}
sink: {type: file, file: {dir: %s, fsync: false}}
`, filepath.Join(dir, "cp.db"), start.Format(time.RFC3339), filepath.Join(dir, "out"))
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Run(ctx, cfg, Options{}, true); err != nil {
		t.Fatal(err)
	}
	var out, notes bytes.Buffer
	code, err := Verify(ctx, cfg, Options{Stdout: &out}, VerifyOptions{Yes: true, JSON: true, Notes: &notes})
	if code != VerifyOK || err != nil {
		t.Fatalf("verify: %d, %v\n%s\n%s", code, err, out.String(), notes.String())
	}
	// dns of the simulator's accounts and the one edge stream: each has a
	// row for the day of start and for the next day (30 hours span two
	// or three days, depending on the hour the test runs), and every row
	// is ok.
	var report struct {
		Rows []struct {
			Source, Day, Status string
		}
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, out.String())
	}
	seen := map[string]bool{}
	for _, r := range report.Rows {
		if r.Status != "ok" {
			t.Errorf("%s %s: status %q, want ok", r.Source, r.Day, r.Status)
		}
		seen[r.Source+" "+r.Day] = true
	}
	for _, src := range []string{"dns", "edge_alerts"} {
		for _, day := range []time.Time{start, start.AddDate(0, 0, 1)} {
			if key := src + " " + day.Format(time.DateOnly); !seen[key] {
				t.Errorf("no row for %s:\n%s", key, out.String())
			}
		}
	}
	if !strings.Contains(notes.String(), "API requests") {
		t.Fatalf("no plan on the notes:\n%s", notes.String())
	}
}

// The sink to count in: the only one, or the one named; several without a
// name, an unknown name and a stdout sink are errors that say which sinks
// there are.
func TestVerifySinkChoice(t *testing.T) {
	cfg := config.Default()
	if sc, err := verifySink(cfg, ""); err != nil || sc.SinkName() != "file" {
		t.Fatalf("the one sink: %v, %v", sc.SinkName(), err)
	}
	cfg.SinkList = config.SinkList{config.DefaultSink(), config.DefaultSink(), config.DefaultSink()}
	cfg.SinkList[0].Name, cfg.SinkList[1].Name, cfg.SinkList[2].Name = "lake", "siem", "tty"
	cfg.SinkList[1].Type, cfg.SinkList[2].Type = config.SinkKafka, config.SinkStdout
	if _, err := verifySink(cfg, ""); err == nil || !strings.Contains(err.Error(), "--sink") || !strings.Contains(err.Error(), "lake, siem, tty") {
		t.Fatalf("several sinks, none named: %v", err)
	}
	if _, err := verifySink(cfg, "nope"); err == nil || !strings.Contains(err.Error(), `no sink named "nope"`) {
		t.Fatalf("an unknown name: %v", err)
	}
	if _, err := verifySink(cfg, "tty"); err == nil || !strings.Contains(err.Error(), "stdout") {
		t.Fatalf("a stdout sink: %v", err)
	}
	if sc, err := verifySink(cfg, "siem"); err != nil || sc.Type != config.SinkKafka {
		t.Fatalf("siem: %v, %v", sc.Type, err)
	}
}

// Without --yes, a standard input that is no terminal is refused before
// anything is asked, and so is "n" at the prompt; an unknown --source and
// an empty checkpoint are usage errors.
func TestVerifyAsksFirst(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.Checkpoint.Path = filepath.Join(t.TempDir(), "cp.db")
	db, err := checkpoint.Open(cfg.Checkpoint.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	run := func(vo VerifyOptions) (int, error, string) {
		var notes bytes.Buffer
		vo.Notes = &notes
		code, err := Verify(ctx, cfg, Options{Stdout: &bytes.Buffer{}}, vo)
		return code, err, notes.String()
	}
	if code, err, _ := run(VerifyOptions{Yes: true}); code != VerifyUsage || err == nil || !strings.Contains(err.Error(), "nothing to verify") {
		t.Fatalf("an empty checkpoint: %d, %v", code, err)
	}
	if code, err, _ := run(VerifyOptions{Source: "nope"}); code != VerifyUsage || err == nil || !strings.Contains(err.Error(), "--source") {
		t.Fatalf("an unknown source: %d, %v", code, err)
	}
	db, err = checkpoint.Open(cfg.Checkpoint.Path)
	if err != nil {
		t.Fatal(err)
	}
	// A state of a collector that did not keep where the stream began,
	// with the default relative start: verify says it does not know
	// rather than guess (issue 29).
	k := record.Stream{Source: "dns", Account: "default"}
	wm := time.Now().Add(-time.Hour)
	if err := db.Commit(ctx, k, checkpoint.State{Cursor: cursor.Cursor{Watermark: wm}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	code, err, notes := run(VerifyOptions{Yes: true})
	if code != VerifyUsage || err == nil || !strings.Contains(err.Error(), "nothing to verify") ||
		!strings.Contains(notes, "dns/default: where the stream began is unknown") || !strings.Contains(notes, "give --from") {
		t.Fatalf("an unknown start: %d, %v\n%s", code, err, notes)
	}
	db, err = checkpoint.Open(cfg.Checkpoint.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(ctx, k, checkpoint.State{Cursor: cursor.Cursor{Watermark: wm, Start: wm.Add(-24 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	code, err, notes = run(VerifyOptions{})
	if code != VerifyUsage || !errors.Is(err, ErrNotConfirmed) || !strings.Contains(err.Error(), "--yes") || !strings.Contains(notes, "about 2 API requests") {
		t.Fatalf("a stdin that is no terminal: %d, %v\n%s", code, err, notes)
	}
	code, err, notes = run(VerifyOptions{Interactive: true, Stdin: strings.NewReader("n\n")})
	if code != VerifyUsage || !errors.Is(err, ErrNotConfirmed) || !strings.Contains(notes, "[y/N]") {
		t.Fatalf("no at the prompt: %d, %v\n%s", code, err, notes)
	}
}
