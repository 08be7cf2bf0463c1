package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/apisim"
	"github.com/svcexport/collector/internal/record"
	"github.com/svcexport/collector/internal/testinfra/chtest"
	"github.com/svcexport/collector/internal/testinfra/harness"
	"github.com/svcexport/collector/internal/testinfra/harness/chharness"
	"github.com/svcexport/collector/internal/testinfra/harness/kafkaharness"
)

// `collector verify` (issue 14): it re-counts the committed windows at the
// API (C3 first-page totalRows, C6 edge rows) and compares, per (stream,
// UTC day), with what the sink delivered; exit 1 on a gap.

// verifySources are a few sources of both APIs: enough to show core and
// edge streams, few enough to stay quick.
var verifySources = []string{"audit_logs", "dns", "user_logins", "edge_alerts"}

// verifyRow is one row of `verify --json`.
type verifyRow struct {
	Source    string    `json:"source"`
	Account   string    `json:"account"`
	Day       string    `json:"day"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	API       int64     `json:"api"`
	Delivered int64     `json:"delivered"`
	Status    string    `json:"status"`
}

type verifyReport struct {
	Rows     []verifyRow `json:"rows"`
	Gaps     int         `json:"gaps"`
	Missing  int64       `json:"missing"`
	Requests int         `json:"requests"`
}

// simRequests is every request the simulator was asked, all users and
// buckets.
func simRequests(sim *apisim.Server) int64 {
	var n int64
	for _, c := range sim.Stats().Counters {
		n += c.Requests
	}
	return n
}

// truthOf is /_truth of a verify row (C8): an edge stream holds every
// envelope account (C6).
func truthOf(sim *apisim.Server, r verifyRow) int64 {
	if harness.IsEdge(r.Source) {
		var sum int64
		for _, a := range sim.Accounts() {
			n, _ := sim.Truth(r.Source, a, r.Start, r.End)
			sum += n
		}
		return sum
	}
	n, _ := sim.Truth(r.Source, r.Account, r.Start, r.End)
	return n
}

// runVerify runs `collector verify --yes --json` (plus args) and decodes
// its report.
func runVerify(t *testing.T, col *harness.Collector, args ...string) (int, verifyReport, string) {
	t.Helper()
	code, stdout, stderr := col.CLIOut(t, nil, append([]string{"verify", "--yes", "--json"}, args...)...)
	var rep verifyReport
	if code == 0 || code == 1 {
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("verify exit %d: stdout is no report (%v):\n%s\nstderr:\n%s", code, err, stdout, harness.Tail(stderr, 20))
		}
	}
	return code, rep, stdout + stderr
}

// checkAgainstTruth wants every row's API count to be /_truth's and, but
// for the rows in gaps (key "source/account day": missing), every row
// complete.
func checkAgainstTruth(t *testing.T, sim *apisim.Server, rep verifyReport, gaps map[string]int64) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range rep.Rows {
		key := fmt.Sprintf("%s/%s %s", r.Source, r.Account, r.Day)
		seen[key] = true
		if want := truthOf(sim, r); r.API != want {
			t.Errorf("%s [%s, %s): verify counted %d at the API, /_truth says %d", key, r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339), r.API, want)
		}
		miss := gaps[key]
		wantStatus := "ok"
		if miss > 0 {
			wantStatus = "gap"
		}
		if r.API-r.Delivered != miss || r.Status != wantStatus {
			t.Errorf("%s: API %d, delivered %d, status %s; want %d missing (%s)", key, r.API, r.Delivered, r.Status, miss, wantStatus)
		}
	}
	for key := range gaps {
		if !seen[key] {
			t.Errorf("%s: no row in the report", key)
		}
	}
}

// plantFileGap removes n lines of the first plain output file of stream
// (source, account) whose records all lie in one UTC day, and returns that
// day.
func plantFileGap(t *testing.T, dir, source, account string, n int) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, source, account, "*.ndjson"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no output files of %s/%s under %s (%v)", source, account, dir, err)
	}
	slices.Sort(files)
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(b, []byte("\n"))
		// Take n lines of one day from the middle of the file.
		byDay := map[string][]int{}
		for i, l := range lines {
			var e harness.Envelope
			if len(bytes.TrimSpace(l)) == 0 || json.Unmarshal(l, &e) != nil {
				continue
			}
			d := e.Time.UTC().Format(time.DateOnly)
			byDay[d] = append(byDay[d], i)
		}
		for d, idx := range byDay {
			if len(idx) < 3*n {
				continue
			}
			drop := map[int]bool{}
			for _, i := range idx[len(idx)/2 : len(idx)/2+n] {
				drop[i] = true
			}
			var out []byte
			for i, l := range lines {
				if !drop[i] {
					out = append(out, l...)
				}
			}
			if err := os.WriteFile(path, out, 0o600); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("no output file of %s/%s holds %d records of one day", source, account, 3*n)
	return ""
}

// The file sink: after `run --once`, verify finds every (stream, day)
// complete and counts what /_truth says; with records removed from the
// output (a planted gap) it names the stream and day with the missing
// count and exits 1. The dry run prints the plan and asks nothing of the
// API; without --yes on a standard input that is no terminal it refuses
// (exit 2) and asks nothing either.
func TestVerifyFindsAPlantedGapInTheFileSink(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-50 * time.Hour).Truncate(time.Hour)
	col := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: verifySources, NoFsync: true})
	col.RunOnce(t, 3*time.Minute)
	wms := col.Watermarks(t)
	days := len(harness.Days(start, wms[record.Stream{Source: "dns", Account: "acme"}].Watermark))
	streams := len(wms)

	before := simRequests(sim)
	code, out := col.CLI(t, nil, "verify", "--dry-run")
	if code != 0 || !regexp.MustCompile(`verify \d+ \(stream, day\) of \d+ streams: about \d+ API requests`).MatchString(out) ||
		!strings.Contains(out, "dry run: nothing was asked of the API") || !strings.Contains(out, "buckets a running collector spends") {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	code, out = col.CLI(t, nil, "verify")
	if code != 2 || !strings.Contains(out, "--yes") {
		t.Fatalf("verify without --yes on a non-terminal stdin: exit %d, want 2 with a hint at --yes\n%s", code, out)
	}
	if n := simRequests(sim) - before; n != 0 {
		t.Fatalf("the dry run and the refused verify asked the API %d times; want 0", n)
	}
	if strings.Contains(out, harness.Secret) || strings.Contains(out, harness.EdgeToken) {
		t.Fatal("a secret in verify's output")
	}

	began := time.Now()
	code, rep, out := runVerify(t, col)
	took := time.Since(began)
	if code != 0 || rep.Gaps != 0 {
		t.Fatalf("verify of a complete output: exit %d, %d gaps\n%s", code, rep.Gaps, out)
	}
	if len(rep.Rows) != streams*days {
		t.Errorf("%d rows; want %d streams x %d days", len(rep.Rows), streams, days)
	}
	checkAgainstTruth(t, sim, rep, nil)
	t.Logf("verified %d days of %d streams with %d requests in %s", days, streams, rep.Requests, took.Round(time.Millisecond))

	day := plantFileGap(t, col.OutDir(), "dns", "acme", 7)
	code, rep, out = runVerify(t, col)
	if code != 1 || rep.Gaps != 1 || rep.Missing != 7 {
		t.Fatalf("verify after 7 records of dns/acme %s were removed: exit %d, %d gaps, %d missing; want 1, 1, 7\n%s", day, code, rep.Gaps, rep.Missing, out)
	}
	checkAgainstTruth(t, sim, rep, map[string]int64{"dns/acme " + day: 7})

	// The table names the stream, the day and the missing count; --source
	// keeps the other sources out.
	code, stdout, _ := col.CLIOut(t, nil, "verify", "--yes", "--source", "dns", "--account", "acme")
	want := fmt.Sprintf("gap: dns/acme %s: the API has", day)
	if code != 1 || !strings.Contains(stdout, want) || !strings.Contains(stdout, ": 7 missing") || strings.Contains(stdout, "audit_logs") {
		t.Fatalf("verify --source dns --account acme: exit %d, want 1 and %q\n%s", code, want, stdout)
	}
	t.Logf("\n%s", stdout)
}

// A relative start (sources.*.start: 24h) is resolved at the stream's
// first run and kept in the checkpoint: verify, without --from, counts
// from there and finds every (stream, day) complete, exit 0. Before, it
// guessed a start a day before the watermark, about a minute before the
// stream began, and reported the minute never collected as gaps that "will
// not close", exit 1 (issue 29).
func TestVerifyAfterARelativeStartNeedsNoFrom(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	col := harness.New(t, harness.Config{Sim: sim, Start: time.Now().UTC(), Sources: verifySources, NoFsync: true,
		Env: []string{"COLLECTOR_SOURCES__DEFAULT__START=24h"}})
	began := time.Now().UTC()
	col.RunOnce(t, 3*time.Minute)
	code, rep, out := runVerify(t, col)
	if code != 0 || rep.Gaps != 0 || len(rep.Rows) == 0 {
		t.Fatalf("verify after start: 24h: exit %d, %d gaps, %d rows; want 0, 0 and rows\n%s", code, rep.Gaps, len(rep.Rows), out)
	}
	for _, r := range rep.Rows {
		if r.Start.Before(began.Add(-24*time.Hour - time.Minute)) {
			t.Errorf("%s/%s %s starts at %s, before the stream began (about %s)", r.Source, r.Account, r.Day, r.Start.Format(time.RFC3339), began.Add(-24*time.Hour).Format(time.RFC3339))
		}
	}
	checkAgainstTruth(t, sim, rep, nil)
	if strings.Contains(out, "unknown") {
		t.Errorf("verify says a start is unknown:\n%s", out)
	}
}

// Bad flags exit 2 naming the flag.
func TestVerifyBadFlagsExit2(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	col := harness.New(t, harness.Config{Sim: sim, Start: time.Now().Add(-time.Hour), Sources: []string{"dns"}})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "yesterday"}, "--from"},
		{[]string{"--to", "2026-13-01"}, "--to"},
		{[]string{"--source", "nope"}, "--source"},
		{[]string{"--sink", "lake"}, "--sink"},
		{[]string{"--from", "2026-01-02", "--to", "2026-01-01"}, "--to"},
	} {
		code, out := col.CLI(t, nil, append([]string{"verify", "--dry-run"}, c.args...)...)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("verify %v: exit %d, want 2 naming %s\n%s", c.args, code, c.want, out)
		}
	}
	if n := simRequests(sim); n != 0 {
		t.Errorf("bad flags asked the API %d times", n)
	}
}

// ClickHouse: records deleted from a table are a gap of their (stream,
// day), exit 1.
func TestVerifyFindsDeletedRowsInClickHouse(t *testing.T) {
	t.Parallel()
	srv := chtest.Get(t)
	db := srv.NewDatabase(t)
	sim := harness.StartSim(t, harness.QuickRates)
	start := time.Now().UTC().Add(-30 * time.Hour).Truncate(time.Hour)
	col := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: verifySources,
		Sink: chharness.SinkYAML(chharness.Addr(srv, "native"), "native", db)})
	col.RunOnce(t, 3*time.Minute)

	code, rep, out := runVerify(t, col)
	if code != 0 || rep.Gaps != 0 {
		t.Fatalf("verify of a complete table: exit %d, %d gaps\n%s", code, rep.Gaps, out)
	}
	checkAgainstTruth(t, sim, rep, nil)

	conn := chharness.Open(t, srv)
	ctx := context.Background()
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT id, toString(toDate(time, 'UTC')) FROM %s.user_logins WHERE account = 'acme' ORDER BY time LIMIT 5", db))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var day string
	for rows.Next() {
		var id, d string
		if err := rows.Scan(&id, &d); err != nil {
			t.Fatal(err)
		}
		if day != "" && d != day {
			break
		}
		ids, day = append(ids, "'"+id+"'"), d
	}
	rows.Close()
	if len(ids) == 0 {
		t.Fatal("no user_logins of acme in the table")
	}
	if err := conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s.user_logins DELETE WHERE id IN (%s) SETTINGS mutations_sync = 2", db, strings.Join(ids, ","))); err != nil {
		t.Fatal(err)
	}
	code, rep, out = runVerify(t, col)
	if code != 1 || rep.Gaps != 1 || rep.Missing != int64(len(ids)) {
		t.Fatalf("verify after %d rows of user_logins/acme %s were deleted: exit %d, %d gaps, %d missing\n%s", len(ids), day, code, rep.Gaps, rep.Missing, out)
	}
	checkAgainstTruth(t, sim, rep, map[string]int64{"user_logins/acme " + day: int64(len(ids))})
}

// While a collector runs, it holds the checkpoint: verify reads a copy,
// says so, and finds its committed days complete.
func TestVerifyWhileTheCollectorRuns(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	metrics := harness.FreeAddr(t)
	start := time.Now().UTC().Add(-26 * time.Hour).Truncate(time.Hour)
	col := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: verifySources, NoFsync: true, Metrics: metrics})
	p := col.Start(t)
	defer p.Stop(30 * time.Second)
	harness.WaitState(t, p, metrics, 2*time.Minute, func(st map[record.Stream]harness.LiveStream) (bool, string) {
		caught := 0
		for _, s := range st {
			if s.CaughtUp {
				caught++
			}
		}
		return len(st) > 0 && caught == len(st), fmt.Sprintf("%d of %d streams caught up, want all", caught, len(st))
	})
	code, rep, out := runVerify(t, col)
	if code != 0 || rep.Gaps != 0 || len(rep.Rows) == 0 || !strings.Contains(out, "read from a copy") {
		t.Fatalf("verify while the collector runs: exit %d, %d rows, %d gaps; want 0 gaps from a copy of the checkpoint\n%s", code, len(rep.Rows), rep.Gaps, out)
	}
	checkAgainstTruth(t, sim, rep, nil)
}

// Kafka, with a topic per source and account: verify reads the topics to
// their end offsets and every (stream, day) is complete, edge alerts (whose
// topics are named after each record's own account) included.
func TestVerifyCountsTheKafkaTopics(t *testing.T) {
	t.Parallel()
	sim := harness.StartSim(t, harness.QuickRates)
	broker := kafkaharness.StartBroker(t, 0)
	start := time.Now().UTC().Add(-26 * time.Hour).Truncate(time.Hour)
	col := harness.New(t, harness.Config{Sim: sim, Start: start, Sources: verifySources,
		Sink: kafkaharness.SinkYAML(broker.Addr, "create_topics: true", `topic: "svc.{source}.{account}"`)})
	col.RunOnce(t, 3*time.Minute)
	code, rep, out := runVerify(t, col)
	if code != 0 || rep.Gaps != 0 || len(rep.Rows) == 0 {
		t.Fatalf("verify of complete topics: exit %d, %d rows, %d gaps\n%s", code, len(rep.Rows), rep.Gaps, out)
	}
	checkAgainstTruth(t, sim, rep, nil)
}
